"""The correctness rules a kernel can be judged by: KernelLab's own, or KernelBench's. Plain
Python (the parent reads it; the sandboxes read the same tables).

KernelLab: the truth is the reference in float64; a kernel passes within 1e-4 (its dtype's
tolerance) or twice PyTorch's own fp32 error; the module's inputs plus two stress distributions;
the kernel's parameters copied by name from the reference's; the median of the timed calls.

KernelBench (src/eval.py and scripts/eval_from_generations.py of ScalingIntelligence/KernelBench,
commit 423217d, and its v0.1 release): the truth is the fp32 reference run on the same device;
`torch.allclose(reference, kernel, atol, rtol)` on each of 5 correctness trials of get_inputs
(eval_from_generations' default); the reference and the kernel each constructed right after
seeding with the same seed, nothing copied; runtime is the mean of the timed trials.
- v0 and v0.1 ("kernelbench"): atol = rtol = 1e-2 whatever the dtype;
- main ("kernelbench-main", get_tolerance_for_precision since 2025-11): 1e-4 for fp32 outputs,
  1e-2 for fp16 and bf16.
Under both, the trusted judge decides as it does for KernelLab's rule (runner/judge/referee.py): only
the truths and the tolerance change, and no allowance over PyTorch's own error is made.
"""

from __future__ import annotations

from .errors import RunnerError

KERNELLAB, KERNELBENCH, KERNELBENCH_MAIN = "kernellab", "kernelbench", "kernelbench-main"
RULES = (KERNELLAB, KERNELBENCH, KERNELBENCH_MAIN)
ALIASES = {"kernelbench-v0.1": KERNELBENCH, "kernelbench-v0": KERNELBENCH}
KERNELBENCH_TRIALS = 5
VERSIONS = {KERNELBENCH: "v0.1", KERNELBENCH_MAIN: "main"}


def resolve(rule: str | None) -> str:
    name = ALIASES.get(rule or KERNELLAB, rule or KERNELLAB)
    if name not in RULES:
        raise RunnerError(f"rule must be one of {', '.join(RULES + tuple(ALIASES))}, not {rule!r}")
    return name


def kernelbench(rule: str | None) -> bool:
    return (rule or KERNELLAB) in (KERNELBENCH, KERNELBENCH_MAIN)


def trials(rule: str | None, kernellab: dict) -> dict:
    """Distribution name -> correctness trials; `kernellab` is KernelLab's own table (problem.TRIALS)."""
    return {"get_inputs": KERNELBENCH_TRIALS} if kernelbench(rule) else dict(kernellab)


def tolerance(rule: str | None, dtype: str) -> tuple[float, float] | None:
    """KernelBench's (atol, rtol) for an output of `dtype` ("float32", ...); None under KernelLab's rule."""
    if rule == KERNELBENCH:
        return 1e-2, 1e-2
    if rule == KERNELBENCH_MAIN:
        return (1e-2, 1e-2) if dtype in ("float16", "bfloat16") else (1e-4, 1e-4)
    return None


def describe(rule: str) -> dict:
    """What a verdict says about the rule that judged it."""
    if not kernelbench(rule):
        return {"name": KERNELLAB, "version": None, "reference": "float64", "trials": None, "statistic": "median"}
    return {"name": rule, "version": VERSIONS[rule], "reference": "fp32 on the same device",
            "trials": KERNELBENCH_TRIALS, "statistic": "mean"}
