"""The C and CUDA text of the playbook's kernels, kept as .c/.cu/.h files under kernels/ so an
editor and a compiler read them as what they are. Each file holds its source from its first line;
the loader puts back the leading newline the families concatenate on."""

from functools import cache
from pathlib import Path

FOLDER = Path(__file__).with_name("kernels")


@cache
def kernel_source(name: str) -> str:
    return "\n" + (FOLDER / name).read_text()
