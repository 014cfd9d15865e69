"""Reads on runs: a run's kernels by (problem, sample) and its scores, from its own kernels only.

A sample is correct when one of its kernels is correct and not quarantined (KernelLab's rule: a
quarantined result is never a win); its speedup is the best of those kernels' against the baseline.
"""

from searches.models import Kernel, Suite, Verdict

from . import scoring
from .models import Run, RunKernel, RunSearch

BASELINES = ("eager", "compile")
MODE = "KernelLab"  # the correctness and timing rule that made every number here
_UNFINISHED = (Verdict.PENDING, Verdict.EVALUATING)


def suite_runs(suite: Suite):
    return Run.objects.filter(suite=suite).order_by("created_at", "id")


def run_entries(run: Run) -> list[tuple[int, int, Kernel]]:
    """(member id, sample, kernel) for every kernel the run owns, directly or through its searches."""
    entries = [(e.member_id, e.sample, e.kernel) for e in RunKernel.objects.filter(run=run).select_related("kernel")]
    for rs in RunSearch.objects.filter(run=run):
        entries += [(rs.member_id, rs.sample, k) for k in Kernel.objects.filter(search_id=rs.search_id)]
    return entries


def _sample(sample: int, kernels, baseline: str) -> dict:
    trusted = [k for k in kernels if k.status == Verdict.CORRECT and not k.quarantined]
    speedups = [getattr(k, f"speedup_vs_{baseline}") for k in trusted]
    speedups = [v for v in speedups if v is not None]
    best = max(trusted, key=lambda k: getattr(k, f"speedup_vs_{baseline}") or 0, default=None)
    return {"sample": sample, "correct": bool(trusted), "speedup": max(speedups) if speedups else None,
            "kernel": best or (kernels[0] if kernels else None),
            "pending": any(k.status in _UNFINISHED for k in kernels)}


def run_table(run: Run, baseline: str = "eager") -> list[dict]:
    """One row per problem of the suite, in KernelBench order, with its samples."""
    grouped: dict[int, dict[int, list]] = {}
    for member_id, sample, kernel in run_entries(run):
        grouped.setdefault(member_id, {}).setdefault(sample, []).append(kernel)
    rows = []
    for member in run.suite.members.select_related("problem").order_by("level", "number", "id"):
        by_sample = grouped.get(member.pk, {})
        samples = [_sample(s, by_sample[s], baseline) for s in sorted(by_sample)]
        rows.append({"member": member, "problem": member.problem, "level": member.level, "number": member.number,
                     "samples": samples, "degenerate": member.problem.degenerate,
                     "sample0": scoring.pick(samples, "sample0"), "best": scoring.pick(samples, "best")})
    return rows


def run_scores(run: Run, baseline: str = "eager") -> dict:
    """fast_p at KernelBench's thresholds, the fast_p curve and the geomean under "sample 0" and
    "best of N", pass@k, and the per-problem table; every number named by mode, rule and baseline."""
    rows = run_table(run, baseline)
    samples = [r["samples"] for r in rows]
    return {
        "run": run, "mode": MODE, "baseline": baseline, "rows": rows, "problems": len(rows),
        "samples": max((len(s) for s in samples), default=0),
        "rules": {rule: scoring.rule_score(samples, rule) for rule in scoring.RULES},
        "pass_at_k": scoring.pass_at_k_table(samples),
        "pending": sum(1 for s in samples for x in s if x["pending"]),
    }


def runs_comparison(runs: list[Run], baseline: str = "eager") -> dict:
    """Scores of runs on one suite side by side, and a row per problem with each run's result."""
    scores = [run_scores(run, baseline) for run in runs]
    problems = []
    for i, row in enumerate(scores[0]["rows"] if scores else []):
        problems.append({"row": row, "runs": [s["rows"][i] for s in scores]})
    return {"scores": scores, "problems": problems, "baseline": baseline, "mode": MODE}
