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


ADVISORY = "advisory"


@dataclass(frozen=True)
class Finding:
    """A static check's finding. `status` is the verdict it gives (`rejected`, `compile_error`), or
    ADVISORY: what the run itself decides (PyTorch compute, a fallback, no kernel of its own, all
    seen by the op recorder and the launch accounting), said beside the verdict and never one."""

    reason: str
    code: str = RULE
    status: str = "rejected"

    @property
    def advisory(self) -> bool:
        return self.status == ADVISORY


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


def figure(value) -> str:
    """An error figure in a reason: None (JSON's stand-in for infinity) or infinity reads inf."""
    return "inf" if value is None or value == float("inf") else f"{value:.3g}"


def wrong_outputs(name: str, err, ref_fp32_err, max_abs_err, mismatch: dict | None = None) -> str:
    """Why a kernel is `incorrect` on one input distribution, in the parent's and the sandbox's words alike;
    with verify.mismatch's summary: "; 64 of 16,384 elements wrong (0.39%), all in the last column, 0 NaN"."""
    text = (f"wrong on the {name} inputs: err {figure(err)} (1 allowed; PyTorch's fp32 gets {figure(ref_fp32_err)}), "
            f"max abs error {figure(max_abs_err)}")
    if mismatch and mismatch.get("total"):
        wrong, total = mismatch["wrong"], mismatch["total"]
        text += f"; {wrong:,} of {total:,} elements wrong ({wrong / total:.2%})"
        if mismatch.get("pattern"):
            text += f", all in {mismatch['pattern']}"
        text += f", {mismatch['nan']:,} NaN, {mismatch['inf']:,} infinite"
    return text
