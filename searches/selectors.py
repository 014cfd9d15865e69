"""Reads: the queries behind pages, exports and the engine. No writes here."""

import hashlib
import os
import uuid
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, F, IntegerField, Max, Min, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from runner import ceilings

from .models import BenchmarkRun, Device, EvaluationJob, Idea, Kernel, Problem, Search, ShareLink, Verdict, Worker

# === problems ===========================================================================


WORKER_SEEN_WITHIN = timedelta(minutes=2)


def _lineage_search_count():
    searches = (
        Search.objects.filter(problem__lineage=OuterRef("lineage"))
        .order_by()
        .values("problem__lineage")
        .annotate(n=Count("id"))
        .values("n")
    )
    return Coalesce(Subquery(searches, output_field=IntegerField()), 0)


def problem_list():
    """Latest version of every problem, with searches counted over all its versions."""
    return (
        Problem.objects.filter(is_latest=True)
        .annotate(search_count=_lineage_search_count())
        .order_by("name", "id")
    )


def problem_versions(problem: Problem):
    """Every version of the problem's lineage, newest first, with its own search and kernel counts."""
    return (
        Problem.objects.filter(lineage=problem.lineage)
        .annotate(search_count=Count("searches", distinct=True), kernel_count=Count("kernels", distinct=True))
        .order_by("-version")
    )


def problem_latest_version(problem: Problem) -> Problem:
    if problem.is_latest:
        return problem
    return Problem.objects.filter(lineage=problem.lineage, is_latest=True).first() or problem


def evaluator_seen(device: str) -> bool:
    since = timezone.now() - WORKER_SEEN_WITHIN
    return Worker.objects.filter(device=device, heartbeat_at__gte=since).exists()


def problem_validation_state(problem: Problem) -> dict:
    """What to tell a person about the problem's validation: a badge, a label, a sentence, and
    whether it is still pending (the page polls while it is)."""
    status = problem.validation_status
    if status == Problem.Validation.OK:
        return {"status": "ok", "badge": "ok", "label": "Valid", "message": "", "pending": False}
    if status == Problem.Validation.INVALID:
        return {"status": "invalid", "badge": "invalid", "label": "Invalid",
                "message": problem.validation_reason, "pending": False}
    if status == Problem.Validation.ERROR:
        return {"status": "error", "badge": "error", "label": "Validation failed",
                "message": problem.validation_reason, "pending": False}

    job = (
        EvaluationJob.objects.filter(problem=problem, purpose=EvaluationJob.Purpose.VALIDATE)
        .order_by("-id")
        .first()
    )
    if job is None or job.status in (EvaluationJob.Status.DONE, EvaluationJob.Status.FAILED):
        return {"status": "pending", "badge": "pending", "label": "Not queued", "pending": False,
                "message": "No validation is queued for this problem. Ask for one with “Validate again”."}
    if job.status == EvaluationJob.Status.LEASED:
        return {"status": "running", "badge": "running", "label": "Validating…", "pending": True,
                "message": f"Validating in a sandbox on {job.lease_owner or 'an evaluator'}: running the reference "
                           "and timing the eager and torch.compile baselines."}
    if problem.device == Device.CUDA:
        message = "Waiting for a CUDA worker: this problem runs on a GPU, so a CPU evaluator will not take it."
        if not evaluator_seen(Device.CUDA):
            message += (" No CUDA evaluator has reported in the last two minutes; start one on a GPU host with "
                        "RUNNER_DEVICE=cuda python manage.py evaluator.")
        return {"status": "queued", "badge": "queued", "label": "Waiting for a CUDA worker", "pending": True,
                "message": message}
    message = "Queued for validation by the evaluator."
    if not evaluator_seen(Device.CPU):
        message += " No CPU evaluator has reported in the last two minutes; is python manage.py evaluator running?"
    return {"status": "queued", "badge": "queued", "label": "Validating…", "pending": True, "message": message}


# === workers ============================================================================
# A worker's status comes from the age of its last heartbeat: it beats every
# Worker.HEARTBEAT_SECONDS, idle or busy with a job. Past the job lease it is gone for the queue:
# the job it held is claimed again by another worker.

WORKER_ALIVE, WORKER_STALE, WORKER_GONE = "alive", "stale", "gone"
WORKER_STALE_AFTER = timedelta(seconds=3 * Worker.HEARTBEAT_SECONDS)  # three beats missed
WORKER_GONE_AFTER = timedelta(seconds=settings.JOB_LEASE_SECONDS)
JOB_FAILURES_WINDOW = timedelta(hours=24)
WORKERS_FORGOTTEN_AFTER = timedelta(days=1)  # gone that long: counted, not listed (a restart is a new name)


def worker_status(age: timedelta | None) -> str:
    """alive, stale or gone, from the time since the worker's last heartbeat (None: never beat)."""
    if age is None or age > WORKER_GONE_AFTER:
        return WORKER_GONE
    if age > WORKER_STALE_AFTER:
        return WORKER_STALE
    return WORKER_ALIVE


def worker_overview(*, now=None) -> dict:
    """The Workers page: every worker with its status, the job queue of each device, and warnings
    for devices whose jobs wait with no worker to take them. Two queries, whatever the counts."""
    now = now or timezone.now()
    rows = [_worker_row(worker, now) for worker in (
        Worker.objects.select_related("current_job__kernel__search__problem", "current_job__problem")
        .order_by(F("heartbeat_at").desc(nulls_last=True), "name"))]
    forgotten = WORKERS_FORGOTTEN_AFTER.total_seconds()
    workers = [row for row in rows if row["heartbeat_age"] is None or row["heartbeat_age"] <= forgotten]
    queues = job_queue_summary(now=now)
    return {"workers": workers, "forgotten": len(rows) - len(workers), "queues": queues,
            "warnings": _worker_warnings(workers, queues),
            "heartbeat_seconds": Worker.HEARTBEAT_SECONDS, "stale_after": WORKER_STALE_AFTER.total_seconds(),
            "gone_after": WORKER_GONE_AFTER.total_seconds()}


def _worker_row(worker: Worker, now) -> dict:
    job = worker.current_job
    # current_job is not cleared when a worker dies: show the job only while this worker holds its lease.
    holds = job is not None and job.status == EvaluationJob.Status.LEASED and job.lease_owner == worker.name
    # Clamped: heartbeats carry the worker host's clock, which may run a little ahead of ours.
    age = max(now - worker.heartbeat_at, timedelta(0)) if worker.heartbeat_at else None
    return {"worker": worker, "status": worker_status(age), "job": job if holds else None,
            "heartbeat_age": age.total_seconds() if age is not None else None}


def job_queue_summary(*, now) -> list[dict]:
    """Per device: jobs queued and running (leased), failed in the last 24 h, and the age of the
    oldest queued job in seconds (None when none waits)."""
    queued = Q(status=EvaluationJob.Status.QUEUED)
    running = Q(status=EvaluationJob.Status.LEASED)
    failed = Q(status=EvaluationJob.Status.FAILED, finished_at__gte=now - JOB_FAILURES_WINDOW)
    counts = {row["device"]: row for row in (
        EvaluationJob.objects.filter(queued | running | failed).order_by().values("device")
        .annotate(queued=Count("id", filter=queued), running=Count("id", filter=running),
                  failed=Count("id", filter=failed), oldest=Min("created_at", filter=queued)))}
    summary = []
    for device, label in Device.choices:
        row = counts.get(device, {})
        oldest = row.get("oldest")
        summary.append({"device": device, "label": label, "queued": row.get("queued", 0),
                        "running": row.get("running", 0), "failed": row.get("failed", 0),
                        "oldest_queued_age": max((now - oldest).total_seconds(), 0) if oldest else None})
    return summary


def _worker_warnings(workers: list[dict], queues: list[dict]) -> list[dict]:
    """A device with queued jobs and no worker seen in WORKER_SEEN_WITHIN (the same test as the
    problem page's)."""
    seen_within = WORKER_SEEN_WITHIN.total_seconds()
    seen = {row["worker"].device for row in workers
            if row["heartbeat_age"] is not None and row["heartbeat_age"] <= seen_within}
    warnings = []
    for queue in queues:
        device = queue["device"]
        if queue["queued"] and device not in seen:
            n, name = queue["queued"], device.upper()
            waiting = f"{n} {name} job is waiting" if n == 1 else f"{n} {name} jobs are waiting"
            warnings.append({
                "device": device,
                "message": f"{waiting} and no {name} worker has sent a heartbeat in the last {seen_within:.0f} s.",
                "command": f"python manage.py evaluator --device {device}",
            })
    return warnings


# === searches ===========================================================================


def search_proposer_unavailable(*, problem: Problem, proposer: str, device: str) -> str:
    """Why `proposer` cannot run a search on `problem` for `device`, or "" when it can.
    The key is checked in this process's environment; the task worker needs it too."""
    if proposer == Search.Proposer.ANTHROPIC:
        if not os.environ.get("ANTHROPIC_API_KEY"):
            return ("The Anthropic proposer needs an API key: set ANTHROPIC_API_KEY in the environment of the web "
                    "server and the task worker (qcluster), then restart them. Without a key, use the built-in playbook.")
        return ""
    if proposer == Search.Proposer.PLAYBOOK:
        family = problem.family
        if not family:
            return (f"The built-in playbook only writes kernels for the op families it knows, and the runner did not "
                    f"recognise “{problem.name}” as one of them: this problem needs an LLM. Set ANTHROPIC_API_KEY "
                    "and choose the Anthropic proposer.")
        if not _playbook_supports(family, device):
            return (f"The built-in playbook has no {device} kernels for the “{family}” family: this problem needs an "
                    "LLM. Set ANTHROPIC_API_KEY and choose the Anthropic proposer.")
        return ""
    return f"Unknown proposer {proposer!r}: choose one of {', '.join(Search.Proposer.values)}."


def _playbook_supports(family: str, device: str) -> bool:
    from .proposers import playbook

    supports = getattr(playbook, "supports", None)
    if supports is not None:
        return bool(supports(family, device))
    from .catalog import playbook as book

    return family in playbook.FAMILY_NAMES and device in book.TARGETS and bool(book.recipes(family, device))


def search_leaderboard(*, search: Search, limit: int = 20) -> list[Kernel]:
    """The search's correct kernels, fastest first (quarantined ones last, flagged)."""
    return list(
        Kernel.objects.filter(search=search, status=Verdict.CORRECT, median_ms__isnull=False)
        .select_related("idea")
        .order_by("quarantined", "median_ms", "id")[:limit]
    )


def search_counts(*, search: Search) -> dict:
    """How many of the search's kernels are in each state, for progress displays."""
    counts = {}
    for status in Kernel.objects.filter(search=search).values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def problem_by_reference(reference: str) -> Problem | None:
    """A problem named on a command line: its catalog key (latest version), UUID code or id."""
    reference = (reference or "").strip()
    found = Problem.objects.filter(catalog_key=reference).order_by("-version").first()
    if found is None:
        try:
            found = Problem.objects.filter(code=uuid.UUID(reference)).first()
        except ValueError:
            found = None
    if found is None and reference.isdigit():
        found = Problem.objects.filter(pk=int(reference)).first()
    return found


# === kernels, compare, leaderboards, sharing ============================================
# Leaderboards rank per problem *version* (an exact program: versions of a lineage may change
# shapes or tolerances, so their timings do not compare) and per GPU model (device_name).


TREE_FIELDS = ("id", "code", "parent_id", "idea_id", "round", "name", "status", "quarantined", "median_ms",
               "speedup_vs_eager", "speedup_vs_compile", "verified", "approved_by_id", "origin", "device_name",
               "precision")


def speed_of_light(problem, kernel) -> dict | None:
    """How close a correct kernel's median is to the floor its problem allows on its GPU
    (runner.ceilings): None where the GPU model's ceilings or the problem's FLOPs and bytes are
    unknown. Works on Kernel rows and on the tree's plain dicts."""
    get = kernel.get if isinstance(kernel, dict) else (lambda name: getattr(kernel, name))
    if get("status") != Verdict.CORRECT:
        return None
    return ceilings.speed_of_light(device_name=get("device_name"), flops=problem.flops, min_bytes=problem.min_bytes,
                                   precision=get("precision"), median_ms=get("median_ms"))


def kernel_is_ranked(kernel) -> bool:
    """Correct, and either plausible or reproduced by a verified rerun and approved by a person.
    Works on Kernel rows and on the tree's plain dicts."""
    get = kernel.get if isinstance(kernel, dict) else lambda name: getattr(kernel, name)
    if get("status") != Verdict.CORRECT or get("median_ms") is None:
        return False
    return not get("quarantined") or (bool(get("verified")) and get("approved_by_id") is not None)


def search_tree(*, search: Search) -> dict:
    """The search's kernels and ideas as plain dicts plus the links between them: compact
    enough to render 2,000 nodes quickly."""
    kernels = list(Kernel.objects.filter(search=search).order_by("id").values(*TREE_FIELDS))
    for k in kernels:
        sol = speed_of_light(search.problem, k)
        k["sol"] = sol["fraction"] if sol else None
    ideas = list(Idea.objects.filter(search=search).order_by("id").values("id", "parent_kernel_id", "round", "title",
                                                                          "origin"))
    kernel_ids = {k["id"] for k in kernels}
    idea_ids = {i["id"] for i in ideas}
    ideas_of_kernel, kernels_of_idea, repairs_of_kernel, roots = defaultdict(list), defaultdict(list), defaultdict(list), []
    root_ideas = []
    for idea in ideas:
        if idea["parent_kernel_id"] in kernel_ids:
            ideas_of_kernel[idea["parent_kernel_id"]].append(idea)
        else:
            root_ideas.append(idea)
    for k in kernels:
        if k["idea_id"] in idea_ids:
            kernels_of_idea[k["idea_id"]].append(k)
        elif k["parent_id"] in kernel_ids:
            repairs_of_kernel[k["parent_id"]].append(k)
        else:
            roots.append(k)
    best = min((k for k in kernels if kernel_is_ranked(k)), key=lambda k: k["median_ms"], default=None)
    return {
        "kernels": kernels, "ideas": ideas, "roots": roots, "root_ideas": root_ideas,
        "ideas_of_kernel": ideas_of_kernel, "kernels_of_idea": kernels_of_idea, "repairs_of_kernel": repairs_of_kernel,
        "best": best, "best_path": _best_path(kernels, best),
    }


def _best_path(kernels: list[dict], best: dict | None) -> dict:
    """Kernel ids and idea ids from the root to the best kernel."""
    path = {"kernels": set(), "ideas": set()}
    by_id = {k["id"]: k for k in kernels}
    node = best
    while node is not None and node["id"] not in path["kernels"]:
        path["kernels"].add(node["id"])
        if node["idea_id"]:
            path["ideas"].add(node["idea_id"])
        node = by_id.get(node["parent_id"])
    return path


def search_best_speedup_by_round(tree: dict, last_round: int) -> list[dict]:
    """The best ranked speedups (vs eager and vs torch.compile) found up to and including each
    round, from round 0 to the later of `last_round` and the last round with a kernel."""
    best_eager = best_compile = None
    per_round = defaultdict(list)
    for k in tree["kernels"]:
        if kernel_is_ranked(k):
            per_round[k["round"]].append(k)
    last = max([last_round, *(k["round"] for k in tree["kernels"])])
    series = []
    for r in range(0, last + 1):
        for k in per_round.get(r, []):
            if k["speedup_vs_eager"] is not None:
                best_eager = max(best_eager or 0, k["speedup_vs_eager"])
            if k["speedup_vs_compile"] is not None:
                best_compile = max(best_compile or 0, k["speedup_vs_compile"])
        series.append({"round": r, "eager": best_eager, "compile": best_compile})
    return series


def search_idea_stats(tree: dict) -> list[dict]:
    """Per idea: how many of its kernels were correct, and the best speedup among them."""
    stats = []
    for idea in tree["ideas"]:
        kernels = tree["kernels_of_idea"].get(idea["id"], [])
        done = [k for k in kernels if k["status"] not in (Verdict.PENDING, Verdict.EVALUATING)]
        correct = [k for k in done if k["status"] == Verdict.CORRECT]
        speedups = [k["speedup_vs_eager"] for k in correct if k["speedup_vs_eager"] is not None]
        stats.append({
            "idea": idea, "kernels": len(kernels), "evaluated": len(done), "correct": len(correct),
            "rate": (len(correct) / len(done)) if done else None, "best_speedup": max(speedups, default=None),
        })
    stats.sort(key=lambda s: (s["rate"] is None, -(s["rate"] or 0), -s["evaluated"]))
    return stats


def search_parent_choices(*, search: Search, limit: int = 30) -> list[Kernel]:
    """Kernels a person may build an idea on: the search's correct ones, fastest first."""
    return list(Kernel.objects.filter(search=search, status=Verdict.CORRECT).exclude(median_ms=None)
                .order_by("median_ms").only("code", "name", "median_ms", "round")[:limit])


def search_planned_candidates(search: Search) -> int:
    """The candidate budget, or the number the round settings lead to when there is none."""
    if search.max_candidates:
        return search.max_candidates
    per_round = search.parents_per_round * search.ideas_per_parent * search.kernels_per_idea
    return max(1, search.rounds * per_round)


# kernel_is_ranked as a filter on a search's kernels.
RANKED_KERNELS = (Q(kernels__status=Verdict.CORRECT) & Q(kernels__median_ms__isnull=False)
                  & (Q(kernels__quarantined=False) | Q(kernels__verified=True, kernels__approved_by__isnull=False)))


def search_list(*, problem=None, limit: int = 200) -> list[Search]:
    """Newest first, each with its planned candidates and best ranked speedups (one query)."""
    qs = (Search.objects.select_related("problem", "created_by").order_by("-created_at")
          .annotate(best_vs_eager=Max("kernels__speedup_vs_eager", filter=RANKED_KERNELS),
                    best_vs_compile=Max("kernels__speedup_vs_compile", filter=RANKED_KERNELS)))
    if problem is not None:
        qs = qs.filter(problem=problem)
    searches = list(qs[:limit])
    for search in searches:
        search.planned = search_planned_candidates(search)
    return searches


def kernel_runs(*, kernel: Kernel):
    return list(BenchmarkRun.objects.filter(kernel=kernel).order_by("-created_at"))


def kernel_primary_run(runs: list[BenchmarkRun]) -> BenchmarkRun | None:
    """The run the kernel's figures come from: its newest search/manual verdict, else any."""
    for run in runs:
        if run.purpose != EvaluationJob.Purpose.RERUN:
            return run
    return runs[0] if runs else None


def kernel_pending_rerun(*, kernel: Kernel) -> bool:
    return EvaluationJob.objects.filter(
        kernel=kernel, purpose=EvaluationJob.Purpose.RERUN,
        status__in=[EvaluationJob.Status.QUEUED, EvaluationJob.Status.LEASED],
    ).exists()


def kernel_by_code(code) -> Kernel:
    return Kernel.objects.select_related("problem", "search", "idea", "parent", "call", "author",
                                         "approved_by").get(code=code)


def kernel_signature(kernel: Kernel):
    """What a kernel computes, for deciding whether two kernels can be compared: its problem's
    outputs (shapes and dtypes) as the runner reported them."""
    outputs = (kernel.problem.validation or {}).get("outputs")
    return tuple((tuple(o.get("shape") or ()), o.get("dtype")) for o in outputs) if outputs else None


def kernel_compare_problem(a: Kernel, b: Kernel) -> str:
    """Empty when the two kernels can be compared, else the reason why not."""
    if a.problem_id == b.problem_id:
        return ""
    sig_a, sig_b = kernel_signature(a), kernel_signature(b)
    if sig_a is None or sig_b is None:
        return ("These kernels solve different problems and at least one problem has not been validated, so "
                "their outputs cannot be checked to match. Compare kernels of the same problem, or validate both.")
    if sig_a != sig_b:
        return "These kernels solve problems with different outputs (shapes or dtypes), so they cannot be compared."
    return ""


def leaderboard_devices(*, problem) -> list[str]:
    return list(Kernel.objects.filter(problem=problem, status=Verdict.CORRECT).exclude(device_name="")
                .values_list("device_name", flat=True).distinct().order_by("device_name"))


def leaderboard(*, problem, device_name: str = "", limit: int = 50) -> list[dict]:
    """One board per GPU model (never mixed): ranked entries, then quarantined kernels waiting
    for a verified rerun and an approval, shown outside the ranking."""
    devices = [device_name] if device_name else leaderboard_devices(problem=problem)
    boards = []
    for device in devices:
        correct = (Kernel.objects.filter(problem=problem, status=Verdict.CORRECT, device_name=device)
                   .exclude(median_ms=None).select_related("search", "search__created_by", "author", "approved_by")
                   .order_by("median_ms", "id"))
        ranked, waiting = [], []
        for kernel in correct[: limit * 4]:
            kernel.sol = speed_of_light(problem, kernel)
            if kernel_is_ranked(kernel):
                if len(ranked) < limit:
                    ranked.append(kernel)
            elif len(waiting) < limit:
                waiting.append(kernel)
        boards.append({"device_name": device, "ranked": ranked, "quarantined": waiting})
    return boards


def leaderboard_rows(boards: list[dict]) -> list[dict]:
    """Flat rows for the JSON/CSV exports."""
    rows = []
    for board in boards:
        for rank, kernel in enumerate(board["ranked"], start=1):
            rows.append(_leaderboard_row(kernel, board["device_name"], rank))
        for kernel in board["quarantined"]:
            rows.append(_leaderboard_row(kernel, board["device_name"], None))
    return rows


def _leaderboard_row(kernel: Kernel, device_name: str, rank: int | None) -> dict:
    who = kernel.author or (kernel.search.created_by if kernel.search_id else None)
    return {
        "rank": rank, "device_name": device_name, "kernel": str(kernel.code), "name": str(kernel),
        "median_ms": kernel.median_ms, "speedup_vs_eager": kernel.speedup_vs_eager,
        "speedup_vs_compile": kernel.speedup_vs_compile, "precision": kernel.precision,
        "speed_of_light": (kernel.sol or {}).get("fraction"),
        "verified_rerun": kernel.verified, "quarantined": kernel.quarantined,
        "approved": kernel.approved_by_id is not None,
        "search": str(kernel.search.code) if kernel.search_id else None,
        "ran_by": who.get_username() if who else "",
        "evaluated_at": kernel.evaluated_at.isoformat() if kernel.evaluated_at else None,
    }


def leaderboard_problems():
    """Problems that have at least one correct kernel, with their best time."""
    from .models import Problem

    return (Problem.objects.filter(kernels__status=Verdict.CORRECT).annotate(last=Max("kernels__evaluated_at"))
            .distinct().order_by("name", "-version"))


def share_token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def share_link_by_token(token: str) -> ShareLink | None:
    """The live link for a token, or None (unknown or revoked)."""
    if not token or len(token) > 200:
        return None
    return (ShareLink.objects.select_related("problem", "search", "kernel", "other_kernel", "created_by")
            .filter(token_hash=share_token_hash(token), revoked_at=None).first())


def share_links_for(**target) -> list[ShareLink]:
    """Links pointing at one object, e.g. share_links_for(kernel=k), newest first."""
    return list(ShareLink.objects.filter(**target).select_related("created_by").order_by("-created_at"))


def search_provenance(*, search: Search) -> list[dict]:
    """The environments of the search's latest runs (a search may span GPUs of one model)."""
    return provenance(BenchmarkRun.objects.filter(kernel__search=search).order_by("-created_at")[:50])


def provenance(runs) -> list[dict]:
    """Hardware and software behind some runs: one entry per distinct environment."""
    seen, out = set(), []
    for run in runs:
        if run is None:
            continue
        env = run.environment or {}
        key = tuple(str(env.get(k, "")) for k in ("device_name", "driver", "torch", "cuda", "runner_version"))
        if key in seen:
            continue
        seen.add(key)
        out.append({"device_name": env.get("device_name") or run.device_name, "driver": env.get("driver"),
                    "torch": env.get("torch"), "cuda": env.get("cuda"), "python": env.get("python"),
                    "runner_version": env.get("runner_version"), "date": run.created_at, "seed": run.seed})
    return out
