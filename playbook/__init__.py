"""The built-in playbook: for each op family and target, a ranked list of optimization ideas,
each with a few parameter variants, rendered into complete ModelNew modules.

Pure Python (no Django, no torch, no cupy): it only writes text. Families live in one module
each (softmax.py, layernorm.py, ...), sharing the boilerplate in prelude.py; their C and CUDA
sources are files under kernels/ (sources.py reads them).
"""

import re
import textwrap

from . import prelude
from .sources import line_marked, without_marks
from .reading import ReadError, read_problem
from .recipes import Family, Parts, Recipe, bind

TARGETS = ("cpu", "cuda")


def families() -> dict[str, Family]:
    from . import conv, elementwise, layernorm, matmul, reduction, softmax

    found = {}
    for module in (softmax, layernorm, matmul, conv, elementwise, reduction):
        for family in module.FAMILIES:
            found[family.name] = family
    return found


def recipes(family: str, target: str) -> tuple[Recipe, ...]:
    return families()[family].recipes[target]


def render(problem_source: str, family: str, target: str, recipe: Recipe, variant: int, *,
           line_marks: bool = False) -> str:
    """A complete kernel module (ModelNew) implementing `recipe` variant `variant` for this problem.
    With `line_marks`, the C/CUDA text carries `#line` directives, so a compiler's messages point
    into playbook/kernels/ (for whoever edits those files); the product runs and shows it plain."""
    shape = read_problem(problem_source)
    spec = families()[family]
    facts = spec.read(shape)
    params = recipe.variants[variant % len(recipe.variants)]
    parts = recipe.render(params)
    source = prelude.defines(params) + (spec.device_code(facts) if spec.device_code else "") + parts.source
    if target == "cuda":
        header = prelude.CUDA_HEADER
        build = (prelude.CUDA_BUILD.replace("@KERNELS@", repr(parts.kernels)).replace("@SETUP@", parts.setup)
                 .replace("@ARCH@", prelude.cuda_arch(parts.arch_suffix)))
        source = prelude.CUDA_COMMON + source
    else:
        header, build = prelude.CPU_HEADER, prelude.CPU_BUILD.replace("@FLAGS@", repr(parts.flags))
        source = prelude.C_COMMON + source
    source = line_marked(source, "_SOURCE") if line_marks else without_marks(source)
    # launch lines name their function as _launch('name', ...): bind it to the built library
    bound = r"_launch(_kernels['\1']" if target == "cuda" else r"_launch(_lib.\1"
    launch = re.sub(r"_launch\('(\w+)'", bound, textwrap.dedent(parts.launch).strip())
    forward = spec.forward(facts, launch)
    args = ", ".join(["self", *shape.forward_args])
    return "\n".join([
        f'"""Playbook kernel: {family}/{target}/{recipe.slug} variant {variant % len(recipe.variants)}.',
        "",
        textwrap.fill(f"{recipe.title}. Parameters: {params or 'none'}.", 96),
        '"""',
        "",
        header,
        shape.constants,
        "",
        f'_SOURCE = r"""{source}"""',
        "",
        "",
        build,
        "",
        "class ModelNew(nn.Module):",
        f"    def __init__({shape.init_args}):",
        textwrap.indent(shape.init_body, " " * 8),
        "",
        f"    def forward({args}):",
        textwrap.indent(forward.strip(), " " * 8),
        "",
    ])


__all__ = ["Parts", "Recipe", "Family", "ReadError", "bind", "families", "recipes", "render", "TARGETS"]
