"""The C and CUDA text of the playbook's kernels, kept as .c/.cu/.h files under kernels/ so an
editor and a compiler read them as what they are. Each file holds its source from its first line;
the loader puts back the leading newline the families concatenate on.

Each file's text travels between two marker lines, so that a rendered kernel can either drop
them (what the product shows and runs) or turn them into `#line` directives (`line_marked`):
then a compiler's messages name the file and its own line numbers, and lines written by the
families' Python keep the numbers they have in the plain kernel."""

import re
from functools import cache
from pathlib import Path

FOLDER = Path(__file__).with_name("kernels")
_BEGIN, _END = "//@playbook-file ", "//@playbook-end"
_MARK = re.compile(rf"^(?:{re.escape(_BEGIN)}(\S+)|{re.escape(_END)})$")


@cache
def kernel_source(name: str) -> str:
    return f"\n{_BEGIN}{name}\n" + (FOLDER / name).read_text() + f"{_END}\n"


def without_marks(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not _MARK.match(line.rstrip("\n")))


def line_marked(text: str, name: str) -> str:
    """`text` with each file's markers turned into `#line` directives. Lines outside any file are
    numbered as in `without_marks(text)` and named `name`."""
    out, plain = [], 0
    for line in text.splitlines(keepends=True):
        found = _MARK.match(line.rstrip("\n"))
        if not found:
            out.append(line)
            plain += 1
            continue
        if found.group(1):  # a file starts: its next line is its line 1
            out.append(f'#line 1 "playbook/kernels/{found.group(1)}"\n')
        else:  # back to the families' text: the next line keeps its plain number
            out.append(f'#line {plain + 1} "{name}"\n')
    return "".join(out)
