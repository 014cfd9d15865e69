"""One definition of a problem's best kernel and of the baseline time behind each speedup, read by
the tree, the Searches list, the leaderboard, the kernel page, the suite pages and the exports.

On the GPU a median is repeatable, so the best kernel is the fastest trusted one by median and its
ratio is the validation's eager median over its own. On the CPU a median follows the host's load at
the moment it was taken, so medians from different runs do not compare: the best kernel is the one
with the highest paired speedup (eager timed in blocks between the kernel's, runner/host/pairing.py),
shown beside the paired eager time it was measured against.
"""

import math

from searches.models import BenchmarkRun, Device

PAIRED = "paired eager"
VALIDATION = "eager"


def ranks_by_paired(device: str) -> bool:
    return device == Device.CPU


def best_order(device: str) -> tuple[str, ...]:
    """The ORM ordering that puts a problem's best kernel first."""
    return ("-speedup_vs_eager", "median_ms", "id") if ranks_by_paired(device) else ("median_ms", "id")


def best_key(device: str):
    """A sort key, smallest first, for Kernel rows and the tree's plain dicts alike."""
    paired = ranks_by_paired(device)

    def key(kernel):
        get = kernel.get if isinstance(kernel, dict) else lambda name: getattr(kernel, name)
        ratio, ms = get("speedup_vs_eager"), get("median_ms")
        ms = math.inf if ms is None else ms
        return (-(ratio or 0.0) if paired else ms, ms, get("id"))
    return key


def pick_best(kernels, device: str):
    """The best of `kernels` (already filtered to the trusted ones), or None."""
    return min(kernels, key=best_key(device), default=None)


def baseline_of(paired: dict | None, baseline: dict | None) -> dict:
    """The eager time a run's speedup used, as runner/host/evaluation.py chose it: the paired eager
    median where the pairing held (CPU), else the validation's eager median."""
    if paired and paired.get("eager_ms") is not None and not paired.get("dropped"):
        return {"eager_ms": paired["eager_ms"], "baseline": PAIRED}
    return {"eager_ms": (baseline or {}).get("eager_ms"), "baseline": VALIDATION}


def baseline_times(kernel_ids) -> dict[int, dict]:
    """Per kernel, `baseline_of` its latest timed run."""
    out = {}
    runs = (BenchmarkRun.objects.filter(kernel_id__in=list(kernel_ids)).exclude(median_ms=None)
            .order_by("kernel_id", "-created_at").values_list("kernel_id", "result__paired", "baseline"))
    for kernel_id, paired, baseline in runs:
        out.setdefault(kernel_id, baseline_of(paired, baseline))
    return out


def with_baselines(kernels) -> list:
    """Sets `eager_ms` and `baseline` on each kernel (rows or dicts); one query."""
    kernels = list(kernels)
    times = baseline_times(k["id"] if isinstance(k, dict) else k.id for k in kernels)
    for k in kernels:
        found = times.get(k["id"] if isinstance(k, dict) else k.id, {"eager_ms": None, "baseline": VALIDATION})
        if isinstance(k, dict):
            k.update(found)
        else:
            k.eager_ms, k.baseline = found["eager_ms"], found["baseline"]
    return kernels
