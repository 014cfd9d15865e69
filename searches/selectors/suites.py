"""Reads on suites: the list, and a suite's scores per GPU model (fast_p, geomean, verdicts).

fast_p (KernelBench's metric) is the fraction of the suite's problems whose best trusted kernel
is correct and more than p times faster than the baseline: fast_0 counts correct problems,
fast_1 faster ones. A kernel is trusted when correct and not quarantined: a quarantined result
(noisy timing, or held back by the evaluator) is counted apart and never as a win.
"""

from django.db.models import Count

from evaluation.models import EvaluationJob
from lib.stats import geomean
from searches.models import Kernel, Problem, Search, Suite, Verdict
from searches.problem_memory import input_bytes

from .speedups import pick_best, with_baselines

FAST_P = (0.0, 1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")

# A problem's outcome on one GPU model, by precedence: a trusted correct kernel wins; then a
# correct but quarantined one; then a caught cheat; then a kernel turned away only for leaving work
# to PyTorch (KernelBench-legal, allowed in library mode: never a cheat); then wrong output; then
# whatever else ran.
OUTCOMES = ("correct", "quarantined", "rejected", "uses_pytorch", "incorrect", "error", "none")
USES_PYTORCH_CODES = ("partial_replacement", "no_kernel_of_its_own")  # runner/common/findings.py
_UNFINISHED = (Verdict.PENDING, Verdict.EVALUATING)


def suite_list():
    return Suite.objects.annotate(n_problems=Count("members")).order_by("name")


def suite_members(suite: Suite):
    """The suite's problems in KernelBench order, each with `validation_label`: a pending problem
    with no validation queued is "stored, not yet validated" (a bulk import does not queue)."""
    members = list(suite.members.select_related("problem").order_by("level", "number", "id"))
    queued = set(
        EvaluationJob.objects.filter(
            problem_id__in=[m.problem_id for m in members], purpose=EvaluationJob.Purpose.VALIDATE,
            status__in=EvaluationJob.UNFINISHED,
        ).values_list("problem_id", flat=True)
    )
    for m in members:
        status = m.problem.validation_status
        stored_only = status == Problem.Validation.PENDING and m.problem_id not in queued
        m.validation_label = "Stored, not yet validated" if stored_only else m.problem.get_validation_status_display()
        m.input_bytes = input_bytes(m.problem.source)  # read from the source: known before any validation
    return members


def suite_device(suite: Suite) -> str:
    """The device most of the suite's problems are stored for (KernelBench's: cuda)."""
    devices = [m.problem.device for m in suite.members.select_related("problem")]
    return max(set(devices), key=devices.count) if devices else "cpu"


def suite_search_counts(suite: Suite) -> dict:
    """How many searches run on the suite's problems, and how many of them are still active."""
    searches = Search.objects.filter(problem__suite_memberships__suite=suite)
    return {"total": searches.count(), "active": searches.filter(status__in=Search.ACTIVE).count()}


def suite_progress(suite: Suite) -> dict:
    """Work on the suite's problems not finished yet: validations, kernels, searches; `busy` if any."""
    problems = Problem.objects.filter(suite_memberships__suite=suite)
    validations = EvaluationJob.objects.filter(
        problem__in=problems, purpose=EvaluationJob.Purpose.VALIDATE,
        status__in=EvaluationJob.UNFINISHED).count()
    kernels = Kernel.objects.filter(problem__in=problems, status__in=_UNFINISHED).count()
    searches = Search.objects.filter(problem__in=problems, status__in=Search.ACTIVE).count()
    return {"validations": validations, "kernels": kernels, "searches": searches,
            "busy": bool(validations or kernels or searches)}


def fast_p_label(p: float) -> str:
    return f"fast_{p:g}"


def _outcome(kernels) -> str:
    if not kernels:
        return "none"
    statuses = {k.status for k in kernels}
    if any(k.status == Verdict.CORRECT and not k.quarantined for k in kernels):
        return "correct"
    if any(k.quarantined for k in kernels):
        return "quarantined"
    if any(_cheat(k) for k in kernels):
        return "rejected"
    if Verdict.REJECTED in statuses:
        return "uses_pytorch"
    if Verdict.INCORRECT in statuses:
        return "incorrect"
    return "error"


def _cheat(kernel) -> bool:
    return kernel.status == Verdict.REJECTED and kernel.reason_code not in USES_PYTORCH_CODES


def _problem_row(member, kernels) -> dict:
    trusted = [k for k in kernels if k.status == Verdict.CORRECT and not k.quarantined]
    # One best kernel (speedups.py), whose two ratios are both shown: never two kernels' maxima.
    best = pick_best(trusted, member.problem.device)
    return {
        "level": member.level,
        "number": member.number,
        "file": member.file_name,
        "problem": member.problem,
        "input_bytes": getattr(member, "input_bytes", None),
        "outcome": _outcome(kernels),
        "correct": bool(trusted),
        "best_kernel": best,
        "speedup_vs_eager": best.speedup_vs_eager if best else None,
        "speedup_vs_compile": best.speedup_vs_compile if best else None,
        "cheats": [k for k in kernels if _cheat(k)],
        "uses_pytorch": [k for k in kernels if k.status == Verdict.REJECTED and not _cheat(k)],
        "degenerate": member.problem.degenerate,
    }


def _device_score(device_name: str, members, kernels_by_problem) -> dict:
    rows = [_problem_row(m, [k for k in kernels_by_problem.get(m.problem_id, []) if k.device_name == device_name])
            for m in members]
    with_baselines([r["best_kernel"] for r in rows if r["best_kernel"]])
    return {"device_name": device_name, **rows_score(rows), "cheats": [k for r in rows for k in r["cheats"]],
            "uses_pytorch": [k for r in rows for k in r["uses_pytorch"]],
            "rows": rows}


def rows_score(rows: list[dict], *, include_degenerate: bool = False) -> dict:
    """fast_p against each baseline, the geomean of the correct problems' speedups and the outcome
    counts, over one row per problem (`outcome`, `speedup_vs_eager`, `speedup_vs_compile`, as
    _problem_row makes them and the JSON export keeps them): a problem is correct when its outcome is.
    A degenerate problem's speedup measures a kernel that need not compute anything: it stays in
    fast_p (marked in the rows) but out of the geomean unless asked."""
    total = len(rows)
    averaged = [r for r in rows if include_degenerate or not r.get("degenerate")]
    fast = {}
    for baseline in BASELINES:
        key = f"speedup_vs_{baseline}"
        fast[baseline] = {}
        for p in FAST_P:
            # fast_0 is correctness alone; above 0 the kernel must also beat this baseline by p.
            wins = sum(1 for r in rows if r["outcome"] == "correct"
                       and (p == 0 or (r[key] is not None and r[key] > p)))
            fast[baseline][fast_p_label(p)] = {"count": wins, "fraction": wins / total if total else None}
    # The same numbers as a list, for templates (which cannot look up "fast_1.5").
    table = [{"label": fast_p_label(p), **{b: fast[b][fast_p_label(p)] for b in BASELINES}} for p in FAST_P]
    return {
        "table": table,
        "problems": total,
        "fast_p": fast,
        "geomean": {b: geomean(r[f"speedup_vs_{b}"] for r in averaged if r["outcome"] == "correct") for b in BASELINES},
        "degenerate": sum(1 for r in rows if r.get("degenerate")),
        "counts": {outcome: sum(1 for r in rows if r["outcome"] == outcome) for outcome in OUTCOMES},
    }


def suite_scores(suite: Suite) -> list[dict]:
    """One score per GPU model (device name) that any of the suite's kernels ran on."""
    members = suite_members(suite)
    kernels = (
        Kernel.objects.filter(problem_id__in=[m.problem_id for m in members])
        .exclude(device_name="")
        .exclude(status__in=_UNFINISHED)
        .select_related("problem")
        .order_by("id")
    )
    by_problem: dict[int, list] = {}
    for kernel in kernels:
        by_problem.setdefault(kernel.problem_id, []).append(kernel)
    devices = sorted({k.device_name for ks in by_problem.values() for k in ks})
    return [_device_score(device, members, by_problem) for device in devices]


def suite_scores_export(suite: Suite) -> dict:
    """The scores as plain data (codes, not objects), for the JSON and CSV exports."""
    out = []
    for score in suite_scores(suite):
        rows = [
            {
                "level": r["level"], "number": r["number"], "file": r["file"],
                "problem": r["problem"].name, "problem_code": str(r["problem"].code),
                "outcome": r["outcome"], "input_bytes": r["input_bytes"],
                "best_kernel_code": str(r["best_kernel"].code) if r["best_kernel"] else None,
                "speedup_vs_eager": r["speedup_vs_eager"], "speedup_vs_compile": r["speedup_vs_compile"],
                "degenerate": r["degenerate"],
            }
            for r in score["rows"]
        ]
        listed = {key: [{"kernel_code": str(k.code), "problem_code": str(k.problem.code), "reason": k.reason}
                        for k in score[key]] for key in ("cheats", "uses_pytorch")}
        plain = {key: value for key, value in score.items() if key != "table"}
        out.append({**plain, "rows": rows, **listed})
    return {"suite": suite.name, "code": str(suite.code), "scores": out}
