"""The playbook's C/CUDA files and the kernels made from them: rendered with line marks, every
line a compiler sees is numbered as in its file under playbook/kernels/ (or as in the plain
kernel, for lines the families write), and a real C compiler's message says so."""

import re
import shutil
import subprocess

import pytest

import playbook
from playbook.sources import FOLDER
from searches import catalog

DIRECTIVE = re.compile(r'^#line (\d+) "([^"]+)"$')
SUBSTITUTED = ("GEOMETRY", "gn < N")  # text some families replace in a file's line (conv.py)


def same_line(in_file: str, rendered: str) -> bool:
    if in_file == rendered:
        return True
    pattern = re.escape(in_file)
    for placeholder in SUBSTITUTED:
        pattern = pattern.replace(re.escape(placeholder), ".+")
    return pattern != re.escape(in_file) and re.fullmatch(pattern, rendered) is not None


def rendered_pairs():
    """(label, plain, marked) for every recipe variant of every family fitting a catalog problem."""
    for path in sorted(catalog.PROBLEM_DIR.glob("*.py")):
        problem = path.read_text()
        for family in playbook.families():
            for target in playbook.TARGETS:
                for recipe in playbook.recipes(family, target):
                    for variant in range(len(recipe.variants)):
                        try:
                            plain = playbook.render(problem, family, target, recipe, variant)
                        except playbook.ReadError:
                            continue
                        marked = playbook.render(problem, family, target, recipe, variant, line_marks=True)
                        yield f"{path.stem} {family}/{target}/{recipe.slug}/{variant}", plain, marked


def c_text(module_source: str) -> str:
    return module_source.split('_SOURCE = r"""', 1)[1].split('"""', 1)[0]


def numbered(text: str):
    """(name, number, line) for each line of `text` that is not a directive, as a compiler numbers it."""
    name, number = "_SOURCE", 1
    for line in text.split("\n"):
        found = DIRECTIVE.match(line)
        if found:
            number, name = int(found.group(1)), found.group(2)
            continue
        yield name, number, line
        number += 1


@pytest.mark.slow
def test_every_marked_line_is_numbered_as_in_its_file_or_in_the_plain_kernel():
    files, checked = {}, 0
    for label, plain, marked in rendered_pairs():
        plain_lines = c_text(plain).split("\n")
        assert '#line 1 "playbook/kernels/' in c_text(marked), label
        for name, number, line in numbered(c_text(marked)):
            if name == "_SOURCE":
                assert plain_lines[number - 1] == line, f"{label}: line {number} of the plain kernel"
            else:
                relative = name.removeprefix("playbook/kernels/")
                if relative not in files:
                    files[relative] = (FOLDER / relative).read_text().split("\n")
                assert same_line(files[relative][number - 1], line), f"{label}: {name}:{number}"
            checked += 1
        # Outside the C text the two renderings are the same module.
        assert plain.replace(c_text(plain), "") == marked.replace(c_text(marked), ""), label
    assert len(files) >= 20 and checked > 10_000


@pytest.mark.slow
def test_plain_kernels_carry_no_marks():
    seen = 0
    for label, plain, _ in rendered_pairs():
        assert "//@playbook" not in plain and "#line" not in plain, label
        seen += 1
    assert seen >= 100, f"only {seen} kernels rendered"


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_a_compiler_error_names_the_file_and_its_line(tmp_path):
    problem = (catalog.PROBLEM_DIR / "softmax_cpu.py").read_text()
    for recipe in playbook.recipes("softmax", "cpu"):  # one whose families' text holds a statement
        text = c_text(playbook.render(problem, "softmax", "cpu", recipe, 0, line_marks=True))
        mapped = list(numbered(text))
        written = [i for i, (name, _, line) in enumerate(mapped) if name == "_SOURCE" and line.strip()]
        if written:
            break
    from_file = next(i for i, (name, _, line) in enumerate(mapped) if name.endswith(".c") and line.strip())
    # Break one line that comes from a file and one the families wrote, as an edit would.
    lines = text.split("\n")
    positions = [i for i, raw in enumerate(lines) if not DIRECTIVE.match(raw)]
    for index in (from_file, written[0]):
        name, number, _ = mapped[index]
        lines[positions[index]] = f"#error broken {name}:{number}"
    source = tmp_path / "kernel.c"
    source.write_text("\n".join(lines))
    done = subprocess.run(["cc", "-fsyntax-only", str(source)], capture_output=True, text=True)
    assert done.returncode != 0
    for index in (from_file, written[0]):
        name, number, _ = mapped[index]
        assert f"{name}:{number}:" in done.stderr, done.stderr
