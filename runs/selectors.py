"""Reads on runs: a run's kernels by (problem, sample) and its scores, from its own kernels only.

Under KernelLab's rule a sample is correct when one of its kernels is correct and not quarantined (a
quarantined result is never a win), and its speedup is the best of those kernels' against the
baseline; under KernelBench's, each kernel's stored verdict is read by runs/kernelbench_mode.py.
"""

from searches.models import BenchmarkRun, Kernel, Suite, Verdict

from . import kernelbench_mode, scoring
from .models import Run, RunKernel, RunSearch
from .published import published_for

BASELINES = ("eager", "compile")
MODE = "KernelLab"  # the default correctness and timing rule; every number names the one that made it
MODES = (MODE, kernelbench_mode.MODE)
_UNFINISHED = (Verdict.PENDING, Verdict.EVALUATING)


def suite_runs(suite: Suite):
    return Run.objects.filter(suite=suite).order_by("created_at", "id")


def run_entries(run: Run) -> list[tuple[int, int, Kernel]]:
    """(member id, sample, kernel) for every kernel the run owns, directly or through its searches."""
    entries = [(e.member_id, e.sample, e.kernel) for e in RunKernel.objects.filter(run=run).select_related("kernel")]
    searches = {rs.search_id: rs for rs in RunSearch.objects.filter(run=run)}
    for kernel in Kernel.objects.filter(search_id__in=list(searches)).order_by("id"):
        entries.append((searches[kernel.search_id].member_id, searches[kernel.search_id].sample, kernel))
    return entries


def run_baselines(run: Run) -> tuple[str, ...]:
    """The baselines a run's speedups can be read against: eager, torch.compile's default, and its own."""
    return BASELINES + tuple(run.baselines or ())


def _speed(baseline: str, results: dict):
    """A kernel's speedup against `baseline`: on its row for eager and compile, else its latest verdict's."""
    if baseline in BASELINES:
        return lambda k: getattr(k, f"speedup_vs_{baseline}")
    return lambda k: ((results.get(k.pk) or {}).get("speedup_vs_more") or {}).get(baseline)


def _sample(sample: int, kernels, speed) -> dict:
    trusted = [k for k in kernels if k.status == Verdict.CORRECT and not k.quarantined]
    speedups = [speed(k) for k in trusted]
    speedups = [v for v in speedups if v is not None]
    best = max(trusted, key=lambda k: speed(k) or 0, default=None)
    return {"sample": sample, "correct": bool(trusted), "speedup": max(speedups) if speedups else None,
            "kernel": best or (kernels[0] if kernels else None), "runtime_ms": best.median_ms if best else None,
            "pending": any(k.status in _UNFINISHED for k in kernels)}


def _kernelbench_sample(sample: int, kernels, results: dict, allow_library: bool, baseline: str = "eager") -> dict:
    judged = [(k, *kernelbench_mode.verdict(k, results.get(k.pk), allow_library)) for k in kernels]
    if baseline != "eager":  # the same verdicts, timed against another baseline
        judged = [(k, ok, kernelbench_mode.speedup_vs(results.get(k.pk), baseline) if ok else None, flag)
                  for k, ok, _, flag in judged]
    correct = [(k, speedup) for k, ok, speedup, _ in judged if ok]
    best = max(correct, key=lambda item: item[1] or 0, default=(kernels[0] if kernels else None, None))
    mean = ((results.get(best[0].pk) or {}).get("timing") or {}).get("mean_ms") if correct else None
    rule = kernelbench_mode.judged_by(results.get(best[0].pk)) if best[0] is not None else "kernellab"
    return {"sample": sample, "correct": bool(correct), "speedup": best[1], "kernel": best[0], "runtime_ms": mean,
            "pending": any(k.status in _UNFINISHED for k in kernels),
            "undecided": not correct and any(flag == "undecided" for *_, flag in judged),
            "source": kernelbench_mode.DERIVED if rule == "kernellab" else kernelbench_mode.RUNNER, "judged_by": rule}


def _latest_results(kernel_ids) -> dict:
    """Each kernel's latest stored verdict (the runner's dict), for KernelBench's rule."""
    latest = {}
    for kernel_id, result in (BenchmarkRun.objects.filter(kernel_id__in=kernel_ids)
                              .order_by("created_at", "id").values_list("kernel_id", "result")):
        latest[kernel_id] = result
    return latest


def run_table(run: Run, baseline: str = "eager", mode: str = MODE) -> list[dict]:
    """One row per problem of the suite, in KernelBench order, with its samples judged by `mode`
    against `baseline` (under KernelBench's rule with its statistic, runs/kernelbench_mode.py)."""
    grouped: dict[int, dict[int, list]] = {}
    entries = run_entries(run)
    for member_id, sample, kernel in entries:
        grouped.setdefault(member_id, {}).setdefault(sample, []).append(kernel)
    results = _latest_results([k.pk for *_, k in entries]) if mode != MODE or baseline not in BASELINES else {}
    speed = _speed(baseline, results)
    members = list(run.suite.members.select_related("problem").order_by("level", "number", "id"))
    published = published_for(m.problem_id for m in members)
    rows = []
    for member in members:
        by_sample = grouped.get(member.pk, {})
        samples = [_sample(s, by_sample[s], speed) if mode == MODE
                   else _kernelbench_sample(s, by_sample[s], results, run.allow_library, baseline)
                   for s in sorted(by_sample)]
        rows.append({"member": member, "problem": member.problem, "level": member.level, "number": member.number,
                     "samples": samples, "degenerate": member.problem.degenerate,
                     "published": published.get(member.problem_id, []),  # measured elsewhere, on their GPU
                     "sample0": scoring.pick(samples, "sample0"), "best": scoring.pick(samples, "best")})
    return rows


def _skipped(run: Run, baseline: str) -> list[str]:
    """Why the runner did not time `baseline` for some of the run's kernels (a CUDA-only one on the CPU)."""
    results = _latest_results([k.pk for *_, k in run_entries(run)]).values()
    reasons = {(((r or {}).get("baseline") or {}).get("more") or {}).get(baseline, {}).get("skipped") for r in results}
    return sorted(reason for reason in reasons if reason)


def run_scores(run: Run, baseline: str = "eager", mode: str = MODE) -> dict:
    """fast_p at KernelBench's thresholds, the fast_p curve and the geomean under "sample 0" and
    "best of N", pass@k, and the per-problem table; every number named by mode, rule and baseline.
    Flagged beside them: degenerate problems and speedups past 10x (counted as KernelBench counts
    them), and in KernelBench's mode the samples its rule cannot decide from stored verdicts."""
    baseline = baseline if baseline in run_baselines(run) else "eager"
    rows = run_table(run, baseline, mode)
    samples = [r["samples"] for r in rows]
    best = [r["best"] for r in rows]
    return {
        "run": run, "mode": mode, "baseline": baseline, "rows": rows, "problems": len(rows),
        "samples": max((len(s) for s in samples), default=0),
        "rules": {rule: scoring.rule_score(samples, rule) for rule in scoring.RULES},
        "pass_at_k": scoring.pass_at_k_table(samples),
        "pending": sum(1 for s in samples for x in s if x["pending"]),
        "flags": {"degenerate": sum(1 for r in rows if r["degenerate"]),
                  "over_10x": sum(1 for ok, v in best if ok and v is not None and v > kernelbench_mode.OVER),
                  "undecided": sum(1 for s in samples for x in s if x.get("undecided"))},
        # which rule made the numbers: under KernelBench's mode, samples the runner judged by KernelBench's
        # rule and samples read off KernelLab's verdicts; under KernelLab's, a run judged by another rule
        # has no KernelLab verdict (its correct kernels are out of KernelLab's rankings)
        "judged_by": run.rule,
        "skipped": _skipped(run, baseline) if baseline not in BASELINES else [],
        "sources": {source: sum(1 for s in samples for x in s if x.get("source") == source)
                    for source in (kernelbench_mode.RUNNER, kernelbench_mode.DERIVED)},
    }


def runs_comparison(runs: list[Run], baseline: str = "eager", mode: str = MODE) -> dict:
    """Scores of runs on one suite side by side, and a row per problem with each run's result."""
    scores = [run_scores(run, baseline, mode) for run in runs]
    problems = []
    for i, row in enumerate(scores[0]["rows"] if scores else []):
        problems.append({"row": row, "runs": [s["rows"][i] for s in scores]})
    return {"scores": scores, "problems": problems, "baseline": scores[0]["baseline"] if scores else baseline,
            "mode": mode}
