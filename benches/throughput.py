"""The product's own throughput: how many candidates a user gets judged per minute, through the
same path as a search from the dashboard (search_start, the engine's loop, an evaluator child
taking EvaluationJobs), and where each candidate's time goes (from the stored BenchmarkRuns).

Two workloads: playbook searches (their candidates, on cuda NVRTC kernels; one or several at
once) and N distinct `load_inline` kernels submitted to one search as a user would (kernel_submit).
"""

import statistics
import time
from pathlib import Path

from django.db.models import Q
from django.utils import timezone

from evaluation.models import EvaluationJob
from searches import services
from searches.foreground import Engines, EvaluatorChild
from searches.models import BenchmarkRun, Problem, Search

# (label, key in a run's `phases`); queue wait comes from the job's timestamps instead.
PHASES = (("compile", "build_s"), ("device wait", "device_wait_s"), ("correctness", "correctness_s"),
          ("timing", "timing_s"), ("truths", "truths_s"), ("sandbox", "sandbox_s"), ("warm wait", "warm_wait_s"))
# The candidate's sandbox holds the device from the end of its device wait to the end of timing,
# the truths' sandbox (runner/inside/truths.py) for its own phase.
DEVICE_HOLDING = ("correctness_s", "timing_s", "truths_s")


def run_search(*, problem: Problem, worker: EvaluatorChild, candidates: int, max_seconds: float,
               searches: int = 1) -> dict:
    """`searches` playbook searches at once (as several users would start them), each of at most
    `candidates` candidates, until all complete (their verified reruns judged too) or `max_seconds`
    pass (then those still running are paused and the window closes)."""
    with Engines() as engines:
        started = [services.search_start(
            problem=problem, user=None, proposer="playbook", device=worker.device, rounds=50, parents_per_round=2,
            ideas_per_parent=3, kernels_per_idea=2, max_candidates=candidates,
            name="throughput benchmark" + (f" {index + 1}" if searches > 1 else "")) for index in range(searches)]
        window = _Window(started, max_seconds)
        for search in started:
            engines.start(search.id)
        worker.wait(lambda: window.over() or all(finished(s.id) for s in started) or engines.died())
        window.close()
    return window.as_dict()


def run_load_inline(*, problem: Problem, worker: EvaluatorChild, sources: list[str], max_seconds: float) -> dict:
    """The sources submitted as user kernels of one paused search (the engine proposes nothing),
    until all are judged or `max_seconds` pass."""
    with Engines():  # none started: the search's kicks wake nothing
        search = services.search_start(problem=problem, user=None, proposer="playbook", device=worker.device,
                                       rounds=1, parents_per_round=1, ideas_per_parent=1, kernels_per_idea=1,
                                       name="throughput benchmark (load_inline)")
        search = services.search_pause(search=search, user=None)
        window = _Window([search], max_seconds)
        for index, source in enumerate(sources):
            services.kernel_submit(user=None, problem=problem, source=source, search=search,
                                   name=f"load_inline {index}")
        worker.wait(lambda: window.over() or not _pending(search.id))
        window.close()
    return window.as_dict()


def drain(window: dict, worker: EvaluatorChild) -> None:
    """Until the window's searches have no job queued or running (judged after it closed)."""
    worker.wait(lambda: not any(_pending(search.id) for search in window["searches"]))


class _Window:
    def __init__(self, searches: list[Search], max_seconds: float):
        self.searches, self.max_seconds = searches, max_seconds
        self.began, self.began_at = time.monotonic(), timezone.now()
        self.ended, self.ended_at = None, None

    def over(self) -> bool:
        return time.monotonic() - self.began > self.max_seconds

    def close(self) -> None:
        self.ended, self.ended_at = time.monotonic(), timezone.now()
        for search in self.searches:
            search.refresh_from_db()
            if search.status in Search.ACTIVE:
                services.search_pause(search=search, user=None)

    def as_dict(self) -> dict:
        return {"searches": self.searches, "wall_s": self.ended - self.began, "began_at": self.began_at,
                "ended_at": self.ended_at}


def _pending(search_id: int) -> int:
    return EvaluationJob.objects.filter(kernel__search_id=search_id, status__in=EvaluationJob.UNFINISHED).count()


def finished(search_id: int) -> bool:
    """The search has ended and none of its jobs (verified reruns too) is queued or running."""
    status = Search.objects.values_list("status", flat=True).get(pk=search_id)
    return status not in Search.ACTIVE and not _pending(search_id)


def measure(*, searches: list[Search], wall_s: float, began_at, ended_at, settings: dict) -> dict:
    """The report: what was judged inside the window, how fast, and where the time went."""
    runs = list(BenchmarkRun.objects.filter(job__kernel__search__in=searches, created_at__gte=began_at,
                                            created_at__lte=ended_at).select_related("job", "job__kernel")
                .order_by("id"))
    phases = {label: [] for label in ("queue wait", *(label for label, _ in PHASES))}
    holding = 0.0
    for run in runs:
        recorded = (run.result or {}).get("phases") or {}
        if run.job.started_at:
            phases["queue wait"].append((run.job.started_at - run.job.created_at).total_seconds())
        for label, key in PHASES:
            if isinstance(recorded.get(key), (int, float)):
                phases[label].append(float(recorded[key]))
        holding += sum(float(recorded.get(key) or 0.0) for key in DEVICE_HOLDING)
    verdicts, purposes = {}, {}
    for run in runs:
        verdicts[run.status] = verdicts.get(run.status, 0) + 1
        purposes[run.purpose] = purposes.get(run.purpose, 0) + 1
    failed = EvaluationJob.objects.filter(kernel__search__in=searches, status=EvaluationJob.Status.FAILED,
                                          finished_at__gte=began_at, finished_at__lte=ended_at).count()
    device_names = sorted({run.device_name for run in runs if run.device_name})
    builds = {}
    for run in runs:
        state = ((run.result or {}).get("build_cache") or {}).get("state")
        if state:
            builds[state] = builds.get(state, 0) + 1
    return {
        "problem": searches[0].problem.catalog_key or searches[0].problem.name,
        "searches": [str(search.code) for search in searches],
        "search_status": ", ".join(sorted({search.status for search in searches})),
        "candidates_judged": len(runs), "by_purpose": purposes, "jobs_failed": failed,
        "wall_s": round(wall_s, 3), "candidates_per_min": round(len(runs) / wall_s * 60, 2) if wall_s else None,
        "phases": {label: _stats(values) for label, values in phases.items()},
        "device_busy_share": round(holding / wall_s, 4) if wall_s else None,
        "verdicts": verdicts,
        "build_cache": builds,
        "timed_under_builds": timed_under_builds(runs),
        "candidates": [_candidate(run, began_at) for run in runs],
        "settings": {**settings, "device_name": ", ".join(device_names)},
    }


def by_problem(searches: list[Search], *, wall_s: float) -> dict:
    """The evaluator over a run of many problems: each problem's candidates and the device time each held
    (correctness, timing and truths), whose inverse is what one GPU could judge of that problem a minute
    with nothing else to wait for; a problem's last verdict where none is correct, and its jobs handed back
    (retried); and the whole run's rate over its wall time."""
    runs = (BenchmarkRun.objects.filter(kernel__search__in=searches).select_related("kernel__problem")
            .order_by("kernel__problem__name", "id"))
    grouped: dict[str, list] = {}
    for run in runs:
        grouped.setdefault(run.kernel.problem.name, []).append(run)
    # jobs the evaluator handed back at least once (the device ran out of memory, a sandbox did not start)
    retried: dict[str, list] = {}
    # a candidate's job reaches its search through its kernel; only a tool run's names the search itself
    jobs = EvaluationJob.objects.filter(Q(kernel__search__in=searches) | Q(search__in=searches))
    for job in jobs.exclude(last_error="").select_related("problem").order_by("id"):
        retried.setdefault(job.problem.name, []).append(job.last_error)
    rows = []
    for name in sorted(set(grouped) | set(retried)):
        judged, errors = grouped.get(name, []), retried.get(name, [])
        wrong = [r for r in judged if r.status != "correct"]
        recorded = [(r.result or {}).get("phases") or {} for r in judged]
        held = [sum(float(p.get(k) or 0.0) for k in DEVICE_HOLDING) for p in recorded if p.get("timing_s") is not None]
        median_held = statistics.median(held) if held else None
        medians = {label: _stats([float(p[key]) for p in recorded if isinstance(p.get(key), (int, float))])["median_s"]
                   for label, key in (("correctness_s", "correctness_s"), ("timing_s", "timing_s"),
                                      ("truths_s", "truths_s"), ("compile_s", "build_s"))}
        rows.append({"problem": name, "judged": len(judged), "correct": len(judged) - len(wrong),
                     "retried": len(errors), "last_retry": errors[-1] if errors else None,
                     # why a problem has no correct kernel: its last verdict
                     "why": f"{wrong[-1].status}: {wrong[-1].reason}" if wrong and len(wrong) == len(judged) else None,
                     "device_s": _stats(held)["median_s"],
                     "ceiling_per_min": round(60 / median_held, 1) if median_held else None, **medians})
    total = sum(row["judged"] for row in rows)
    return {"problems": rows, "judged": total, "wall_s": round(wall_s, 3),
            "candidates_per_min": round(total / wall_s * 60, 2) if wall_s else None}


def by_problem_table(report: dict) -> list[str]:
    lines = [f"evaluator: {report['judged']} judged in {report['wall_s']:.1f} s, {report['candidates_per_min']} "
             "candidates/min over the run; per problem, the device time each candidate held (correctness + timing "
             "+ truths) and the candidates a minute that alone would allow",
             f"{'problem':<44} {'judged':>6} {'correct':>7} {'retried':>7} {'device s':>8} {'ceiling/min':>11} "
             f"{'corr s':>7} {'timing s':>8} {'truths s':>8} {'compile s':>9}"]
    for row in report["problems"]:
        shown = ["-" if row[k] is None else f"{row[k]:.1f}" if k == "ceiling_per_min" else f"{row[k]:.3f}"
                 for k in ("device_s", "ceiling_per_min", "correctness_s", "timing_s", "truths_s", "compile_s")]
        lines.append(f"{row['problem'][:44]:<44} {row['judged']:>6} {row['correct']:>7} {row['retried']:>7} "
                     f"{shown[0]:>8} {shown[1]:>11} {shown[2]:>7} {shown[3]:>8} {shown[4]:>8} {shown[5]:>9}")
    for row in report["problems"]:
        if row["why"]:
            lines.append(f"no correct kernel, {row['problem']}: {row['why'][:240]}")
        if row["retried"]:
            lines.append(f"handed back ({row['retried']} job(s)), {row['problem']}: {row['last_retry'][:240]}")
    return lines


def _windows(run) -> tuple[float, float, float, float] | None:
    """(build start, build end, timing start, timing end) in epoch seconds, from the job's start and
    the run's phases (the few milliseconds of parent work before the sandbox are not counted)."""
    phases = (run.result or {}).get("phases") or {}
    if not run.job.started_at or not all(isinstance(phases.get(k), (int, float)) for k in
                                         ("build_s", "device_wait_s", "correctness_s", "timing_s")):
        return None
    build = run.job.started_at.timestamp() + float(phases.get("warm_wait_s") or 0.0)
    built = build + phases["build_s"]
    timed = built + phases["device_wait_s"] + phases["correctness_s"]
    return build, built, timed, timed + phases["timing_s"]


def _candidate(run, began_at) -> dict:
    """One judged run, in the order judged: when its job started in the window and its phases, so that a phase
    that moved between two windows shows whether every candidate moved or a few (the first of a sandbox, a burst)."""
    recorded = (run.result or {}).get("phases") or {}
    return {"kernel": run.job.kernel.name if run.job.kernel_id else "", "status": run.status,
            "started_s": round((run.job.started_at - began_at).total_seconds(), 3) if run.job.started_at else None,
            **{key: round(float(recorded[key]), 4) for _, key in PHASES if isinstance(recorded.get(key), (int, float))}}


def timed_under_builds(runs: list) -> list[dict]:
    """Per correct run: its median and how many other candidates' compiles (load_inline builds that
    did not come from the cache) overlapped its timing window (compiles contending with timing)."""
    windows = {run.id: _windows(run) for run in runs}
    compiling = [windows[r.id] for r in runs if windows[r.id] and
                 ((r.result or {}).get("build_cache") or {}).get("state") in ("miss", "published")]
    rows = []
    for run in runs:
        timing, window = (run.result or {}).get("timing") or {}, windows[run.id]
        if run.status != "correct" or not window or not timing.get("median_ms"):
            continue
        overlapping = sum(1 for other in compiling if other is not window and other[0] < window[3]
                          and other[1] > window[2])
        rows.append({"kernel": run.job.kernel.name if run.job.kernel_id else "", "median_ms": timing["median_ms"],
                     "builds_during_timing": overlapping})
    return rows


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "median_s": None, "total_s": 0.0}
    return {"n": len(values), "median_s": round(statistics.median(values), 4), "total_s": round(sum(values), 3)}


def table(report: dict) -> list[str]:
    """The report as lines for a terminal."""
    s = report["settings"]
    lines = [
        f"problem {report['problem']} on {s['device']} ({s['device_name'] or 'device unknown'}), mode {s['mode']}, "
        f"jobs in flight {s['jobs_in_flight']} ({s.get('quick_jobs_in_flight', s['jobs_in_flight'])} without a long "
        f"build), pool size {s['pool_size']}",
        f"judged {report['candidates_judged']} ({_counts(report['by_purpose'])}) in {report['wall_s']:.1f} s: "
        f"{report['candidates_per_min']} candidates/min; jobs failed {report['jobs_failed']}",
        f"verdicts: {_counts(report['verdicts']) or 'none'}",
        f"device busy share: {_share(report['device_busy_share'])} (correctness, timing and truths over wall time)",
        f"load_inline build cache: {_counts(report.get('build_cache') or {}) or 'not used'}",
        f"{'phase':<12} {'n':>4} {'median s':>9} {'total s':>9}",
    ]
    for label, row in report["phases"].items():
        median = f"{row['median_s']:.3f}" if row["median_s"] is not None else "-"
        lines.append(f"{label:<12} {row['n']:>4} {median:>9} {row['total_s']:>9.2f}")
    return lines


def _counts(counts: dict) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))


def _share(value) -> str:
    return f"{value:.1%}" if value is not None else "-"


# An honest row softmax (one block per row on CUDA, one loop per row in C++), as a KernelBench-style
# load_inline module. The index is in the sources, so no two candidates share a build cache entry.
KERNELS = Path(__file__).resolve().parent / "kernels"


def load_inline_sources(*, device: str, count: int) -> list[str]:
    """`count` distinct load_inline softmax kernels for a softmax problem on `device`."""
    template = (KERNELS / f"softmax_load_inline_{'cuda' if device == 'cuda' else 'cpu'}.py.in").read_text()
    return [template.replace("@INDEX@", str(index)) for index in range(count)]


def contention(loaded: dict, quiet: dict, *, builds: int = 8, tolerance: float = 0.02) -> dict:
    """Medians of candidates timed while at least `builds` other compiles ran (the first pass of
    distinct load_inline kernels) against the same kernels timed with no compile running (the
    second pass, every build from the cache). `within`: every loaded median is within `tolerance`
    of the quiet median (the repeatability target, 2%); the quiet pass's own range is reported
    beside it, since on a quiet GPU it spans a few hundredths of a percent."""
    quiet_ms = [row["median_ms"] for row in quiet.get("timed_under_builds", []) if row["builds_during_timing"] == 0]
    loaded_ms = [row["median_ms"] for row in loaded.get("timed_under_builds", [])
                 if row["builds_during_timing"] >= builds]
    if not quiet_ms or not loaded_ms:
        return {"builds_at_least": builds, "quiet_n": len(quiet_ms), "loaded_n": len(loaded_ms), "within": None}
    centre = statistics.median(quiet_ms)
    low, high = min(quiet_ms), max(quiet_ms)
    worst = max(abs(ms / centre - 1) for ms in loaded_ms)
    return {"builds_at_least": builds, "quiet_n": len(quiet_ms), "loaded_n": len(loaded_ms),
            "quiet_median_ms": centre, "quiet_spread": round((high - low) / centre, 5),
            "loaded_median_ms": statistics.median(loaded_ms),
            "loaded_vs_quiet": round(statistics.median(loaded_ms) / centre - 1, 5),
            "loaded_outside_quiet_range": sum(1 for ms in loaded_ms if not low <= ms <= high),
            "loaded_worst_vs_quiet": round(worst, 5), "tolerance": tolerance, "within": worst <= tolerance}
