"""The playbook's vocabulary: a family of ops, its ranked recipes (ideas) and what one
variant of a recipe contributes to a kernel module. Family modules import these."""

from dataclasses import dataclass, field
from typing import Callable

from .reading import ProblemShape


@dataclass(frozen=True)
class Parts:
    """What one idea variant contributes: device source, forward's launch lines, build details."""

    source: str
    launch: str
    flags: tuple[str, ...] = ()  # extra C compiler flags (cpu)
    kernels: tuple[str, ...] = ()  # __global__ names to load (cuda)
    setup: str = ""  # module-level lines run once after the build (cuda)
    # appended to the target on GPUs of compute capability 9.0 and up, for their arch-specific features
    # ("a": -arch=sm_90a, which wgmma needs); empty: the plain -arch=sm_XY (cuda)
    arch_suffix: str = ""


@dataclass(frozen=True)
class Recipe:
    slug: str
    title: str
    description: str
    variants: tuple[dict, ...]
    render: Callable[[dict], Parts] = field(repr=False)


@dataclass(frozen=True)
class Family:
    name: str
    read: Callable[[ProblemShape], dict]  # facts about the op, as expressions for forward
    forward: Callable[[dict, str], str]  # (facts, launch lines) -> forward body
    recipes: dict  # target -> tuple[Recipe, ...]; the first one is the starting kernel
    device_code: Callable[[dict], str] | None = None  # op-specific C/CUDA helpers from the facts


def bind(name: str, expression: str) -> str:
    """`name = expression` as a line of forward, or nothing when it would be `x = x`."""
    return "" if name == expression else f"{name} = {expression}\n"
