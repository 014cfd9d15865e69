"""KernelBench's rule applied to a kernel's stored verdict, where the stored figures allow it.

KernelBench (eval.py at the pinned commit) calls a kernel correct when its output on get_inputs is
`allclose` to the fp32 reference with atol = rtol = 1e-2, allows library calls, has no quarantine,
and times with the mean of its trials. From a KernelLab verdict:
- correct under KernelLab (tolerance 1e-4 or 2x PyTorch's error, quarantined or not): correct;
- incorrect, with a stored max. absolute error on get_inputs within 1e-2: correct (atol alone passes
  allclose); over it, undecided (allclose also allows rtol * |reference|, which is not stored);
- turned away only for leaving work to PyTorch in a run without library calls: undecided (it never ran);
- anything else (build error, crash, cheat caught): not correct.
Speedup: the eager time measured beside the kernel over the kernel's mean (KernelBench's statistic);
the eager side stays the runner's estimate (its median), which the numbers' label says. Against another
baseline (`speedup_vs`, as KernelBench's analysis reads a torch.compile timing file) the same way: that
baseline's median over the kernel's mean, or its mean where the runner judged by KernelBench's rule (an
extra baseline's; torch.compile's default keeps only its median).

A verdict the runner made under KernelBench's rule (a run whose rule is KernelBench's; the verdict's
`rule` names it) is used as it is: its status decides, whatever KernelLab's quarantine says, and its
speedup is the eager mean over the kernel's mean. Each sample says which of the two made its number.
"""

from searches.models import Verdict

MODE = "KernelBench"
ATOL = RTOL = 1e-2
LIBRARY_CODES = ("partial_replacement", "no_kernel_of_its_own")  # runner/common/findings.py
OVER = 10.0  # KernelBench counts speedups past 10x like any other; they are flagged beside the number


RUNNER, DERIVED = "runner", "derived"  # judged by the runner under KernelBench's rule; read off KernelLab's verdict


def judged_by(result: dict | None) -> str:
    """The rule that made a stored verdict: "kernellab", "kernelbench" (v0.1) or "kernelbench-main"."""
    return ((result or {}).get("rule") or {}).get("name") or "kernellab"


def verdict(kernel, result: dict | None, allow_library: bool) -> tuple[bool, float | None, str]:
    """(correct, speedup vs eager, flag) of one kernel under KernelBench's rule; flag is "" or
    "undecided" (the stored verdict cannot say)."""
    result = result or {}
    if judged_by(result) != "kernellab":  # the runner's own KernelBench verdict
        if result.get("status") != Verdict.CORRECT:  # library calls refused by the run, not by KernelBench's rule
            undecided = result.get("reason_code") in LIBRARY_CODES and not allow_library
            return False, None, "undecided" if undecided else ""
        return True, (result.get("kernelbench") or {}).get("speedup_vs_eager"), ""
    if kernel.status == Verdict.CORRECT:
        return True, _speedup(kernel, result), ""
    if kernel.status == Verdict.INCORRECT:
        errors = [d.get("max_abs_err") for d in (result.get("correctness") or {}).get("per_distribution", [])
                  if d.get("name") == "get_inputs" and not d.get("skipped")]
        if errors and all(e is not None and e <= ATOL for e in errors):
            return True, _speedup(kernel, result), ""
        return False, None, "undecided" if errors else ""
    if kernel.status == Verdict.REJECTED and kernel.reason_code in LIBRARY_CODES and not allow_library:
        return False, None, "undecided"
    return False, None, ""


def _speedup(kernel, result: dict) -> float | None:
    mean = (result.get("timing") or {}).get("mean_ms")
    eager = (result.get("paired") or {}).get("eager_ms") or (result.get("baseline") or {}).get("eager_ms")
    return eager / mean if eager and mean else None


def speedup_vs(result: dict | None, baseline: str) -> float | None:
    """A correct kernel's speedup under KernelBench's statistic against `baseline` ("compile" or one of
    the extra baselines), its side read as eager's is: the baseline's median over the kernel's mean, or
    its mean where the runner judged by KernelBench's rule (torch.compile's default has no mean)."""
    result = result or {}
    mean = (result.get("timing") or {}).get("mean_ms")
    base = result.get("baseline") or {}
    if baseline == "compile":
        ms = base.get("compile_ms")
    else:
        row = (base.get("more") or {}).get(baseline) or {}
        ms = row.get("mean_ms") if judged_by(result) != "kernellab" else row.get("ms")
    return ms / mean if ms and mean else None
