"""Why a kernel is turned away, as a code a program can read beside the sentence a person reads.

The codes (`reason_code` in every verdict; null when nothing was refused):
- `partial_replacement`: the kernel runs a kernel of its own and leaves some ops to PyTorch, as
  KernelBench allows; it is judged normally in a search that allows library calls.
- `no_kernel_of_its_own`: the computation is all PyTorch or a library's, no kernel of its own.
- `unsupported_toolchain`: written for a toolchain this runner does not target (HIP/ROCm), or for a
  package that is not installed where the evaluator runs (a `compile_error`).
- `rule`: any other rule of docs/KERNEL_FORMAT.md (patching, caching, side streams, ...).

Plain Python: the parent and the sandbox both use it.
"""

from __future__ import annotations

from dataclasses import dataclass

PARTIAL = "partial_replacement"
NO_KERNEL = "no_kernel_of_its_own"
TOOLCHAIN = "unsupported_toolchain"
RULE = "rule"
CODES = (PARTIAL, NO_KERNEL, TOOLCHAIN, RULE)


@dataclass(frozen=True)
class Finding:
    reason: str
    code: str = RULE
    status: str = "rejected"


def partial_reason(ops: list[str], where: str = "forward") -> str:
    """The sentence for a partial replacement, naming the ops left to PyTorch (at most six)."""
    names = list(dict.fromkeys(ops))
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    return (f"{where} uses PyTorch for {shown}; allowed when the search allows library calls, "
            "otherwise do these in your own kernel too")


def aten_name(op: str) -> str:
    """`aten.relu.default` -> `relu`; other namespaces keep theirs (`prims.add`)."""
    parts = op.split(".")
    if len(parts) >= 2 and parts[0] == "aten":
        return parts[1]
    return ".".join(parts[:2]) if len(parts) > 2 else op
