"""The run scores' arithmetic, plain Python: fast_p, geometric mean, pass@k, the fast_p curve.

A problem's result is a list of samples, each `(correct, speedup)`. "sample 0" scores each problem
by its sample 0 (KernelBench's analysis does the same); "best of N" by its best correct sample.
fast_p counts problems correct and faster than p (p = 0: correct alone) over all problems of the
suite, so a problem with no sample counts as a miss, as KernelBench patches missing problems.
"""

import math

from lib.stats import geomean

THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)  # KernelBench's analysis (scripts/benchmark_eval_analysis.py)
CURVE_P = tuple(round(0.05 * i, 2) for i in range(61))  # 0 to 3
RULES = {"sample0": "sample 0", "best": "best of N"}


def pick(samples, rule: str):
    """(correct, speedup) of a problem under `rule`; (False, None) without samples."""
    if rule == "sample0":
        first = [s for s in samples if s["sample"] == 0]
        return (first[0]["correct"], first[0]["speedup"]) if first else (False, None)
    correct = [s["speedup"] for s in samples if s["correct"]]
    if not correct:
        return False, None
    timed = [v for v in correct if v is not None]
    return True, max(timed) if timed else None


def fast_p(picked, p: float) -> float | None:
    """Share of problems correct and more than p times faster (p = 0: correct)."""
    if not picked:
        return None
    wins = sum(1 for ok, speedup in picked if ok and (p == 0 or (speedup is not None and speedup > p)))
    return wins / len(picked)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) of n samples, c correct."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def rule_score(samples_by_problem: list[list[dict]], rule: str) -> dict:
    picked = [pick(samples, rule) for samples in samples_by_problem]
    return {
        "rule": RULES[rule],
        "fast_p": [{"p": p, "label": f"fast_{p:g}", "value": fast_p(picked, p)} for p in THRESHOLDS],
        "curve": [(p, fast_p(picked, p)) for p in CURVE_P],
        "geomean": geomean(speedup for ok, speedup in picked if ok),
        "correct": sum(1 for ok, _ in picked if ok),
        "speedups": [speedup for ok, speedup in picked if ok and speedup is not None],
    }


def pass_at_k_table(samples_by_problem: list[list[dict]]) -> list[dict]:
    """Mean pass@k over the problems, for k up to the fewest samples any problem has."""
    counts = [(len(s), sum(1 for x in s if x["correct"])) for s in samples_by_problem]
    if not counts or min(n for n, _ in counts) == 0:
        return []
    return [{"k": k, "value": sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)}
            for k in range(1, min(n for n, _ in counts) + 1)]
