"""Writes: every change to KernelLab's data goes through a function here.

Functions are keyword-only, named <entity>_<action>, and run in a transaction; events and
queued work are sent only after commit.
"""

import random
import secrets

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from . import engine, events, jobs
from .models import BenchmarkRun, Device, EvaluationJob, Idea, Kernel, Problem, Search, ShareLink, Verdict
from .problem_checks import check_problem_source
from .selectors import share_token_hash

# === problems ===========================================================================


PROBLEM_EDITABLE_FIELDS = ("name", "description", "source", "atol", "rtol", "device")
# Changing any of these changes what validation measures (or what correctness will use).
PROBLEM_SEMANTIC_FIELDS = ("source", "device", "atol", "rtol")


def _problem_check_fields(*, name: str, device: str, atol, rtol) -> None:
    if not (name or "").strip():
        raise ValidationError("Give the problem a name.", code="name")
    if device not in Device.values:
        raise ValidationError(f"Unknown device {device!r}: choose one of {', '.join(Device.values)}.", code="device")
    for label, value in (("atol", atol), ("rtol", rtol)):
        if value is not None and not (value >= 0 and value < float("inf")):
            raise ValidationError(f"{label} must be a finite number of at least 0 (got {value}).", code=label)


def _problem_queue_validation(problem: Problem) -> EvaluationJob:
    """Reset the problem's validation and queue a sandboxed run. Older queued runs are dropped:
    their result would describe a source the problem no longer has."""
    EvaluationJob.objects.filter(
        problem=problem, purpose=EvaluationJob.Purpose.VALIDATE, status=EvaluationJob.Status.QUEUED
    ).update(status=EvaluationJob.Status.FAILED, last_error="superseded by an edit", finished_at=timezone.now())
    problem.validation_status = Problem.Validation.PENDING
    problem.validation_reason = ""
    problem.validation = None
    problem.validated_at = None
    problem.flops = None
    problem.min_bytes = None
    return jobs.enqueue_validation(problem)


@transaction.atomic
def problem_create(
    *,
    user,
    name: str,
    source: str,
    description: str = "",
    atol: float | None = None,
    rtol: float | None = None,
    device: str = Device.CPU,
    catalog_key: str = "",
    family: str = "",
) -> Problem:
    """Save a problem after the static checks and queue its sandboxed validation."""
    check_problem_source(source)
    _problem_check_fields(name=name, device=device, atol=atol, rtol=rtol)
    problem = Problem.objects.create(
        name=name.strip(),
        description=description.strip(),
        source=source,
        atol=atol,
        rtol=rtol,
        device=device,
        catalog_key=catalog_key,
        family=family,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    jobs.enqueue_validation(problem)
    return problem


@transaction.atomic
def problem_update(*, problem: Problem, user, **fields) -> Problem:
    """Edit a problem. One with searches or kernels is never changed in place: the edit becomes
    a new version of the same lineage and the old version keeps its results. Returns the
    problem as it is now (the new version, when one was made)."""
    unknown = set(fields) - set(PROBLEM_EDITABLE_FIELDS)
    if unknown:
        raise TypeError(f"problem_update cannot change {', '.join(sorted(unknown))}")
    current = Problem.objects.select_for_update().get(pk=problem.pk)
    if not current.is_latest:
        latest = Problem.objects.get(lineage=current.lineage, is_latest=True)
        raise ValidationError(
            f"This is version {current.version}, and version {latest.version} is the latest: edit the latest version.",
            code="not_latest",
        )
    if "name" in fields:
        fields["name"] = (fields["name"] or "").strip()
    if "description" in fields:
        fields["description"] = (fields["description"] or "").strip()
    changes = {key: value for key, value in fields.items() if getattr(current, key) != value}
    if not changes:
        return current
    if "source" in changes:
        check_problem_source(changes["source"])
    merged = {key: changes.get(key, getattr(current, key)) for key in ("name", "device", "atol", "rtol")}
    _problem_check_fields(**merged)
    revalidate = any(key in changes for key in PROBLEM_SEMANTIC_FIELDS)

    if current.searches.exists() or current.kernels.exists():
        return _problem_new_version(current=current, user=user, changes=changes, revalidate=revalidate)
    for key, value in changes.items():
        setattr(current, key, value)
    if revalidate:
        _problem_queue_validation(current)
    current.save()
    return current


def _problem_new_version(*, current: Problem, user, changes: dict, revalidate: bool) -> Problem:
    top = Problem.objects.filter(lineage=current.lineage).aggregate(top=Max("version"))["top"]
    new = Problem(
        lineage=current.lineage,
        version=top + 1,
        previous_version=current,
        catalog_key=current.catalog_key,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    carried = ["name", "description", "source", "atol", "rtol", "device", "family"]
    if not revalidate:  # same program, same device: the measurements still hold
        carried += ["validation_status", "validation_reason", "validation", "validated_at", "flops", "min_bytes"]
    for key in carried:
        setattr(new, key, getattr(current, key))
    for key, value in changes.items():
        setattr(new, key, value)
    Problem.objects.filter(lineage=current.lineage, is_latest=True).update(is_latest=False)
    new.is_latest = True
    new.save()
    if revalidate:
        jobs.enqueue_validation(new)
    return new


@transaction.atomic
def problem_request_validation(*, problem: Problem, user) -> EvaluationJob:
    """Validate the problem again, e.g. after its evaluator died or to refresh its baselines."""
    problem = Problem.objects.select_for_update().get(pk=problem.pk)
    job = _problem_queue_validation(problem)
    problem.save()
    return job


def _problem_job_is_stale(problem: Problem, job) -> bool:
    """A validation job older than the problem's newest one ran on a source it no longer has."""
    if job is None:
        return False
    return EvaluationJob.objects.filter(
        problem=problem, purpose=EvaluationJob.Purpose.VALIDATE, id__gt=job.id
    ).exists()


def _job_mark_done(job) -> None:
    if job is not None and job.status != EvaluationJob.Status.DONE:
        job.status = EvaluationJob.Status.DONE
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "finished_at"])


@transaction.atomic
def problem_record_validation(*, problem: Problem, job, result: dict) -> None:
    """Store the runner's `validate` verdict on the problem (the evaluation worker calls this)."""
    problem = Problem.objects.select_for_update().get(pk=problem.pk)
    if _problem_job_is_stale(problem, job):
        _job_mark_done(job)
        return
    status = result.get("status")
    if status == "ok":
        problem.validation_status = Problem.Validation.OK
        problem.validation_reason = result.get("reason") or ""
    elif status == "invalid":
        problem.validation_status = Problem.Validation.INVALID
        problem.validation_reason = result.get("reason") or "The reference failed, and the runner gave no reason."
    else:
        problem.validation_status = Problem.Validation.ERROR
        problem.validation_reason = f"The runner answered with an unknown status {status!r}."
    problem.validation = result
    problem.family = result.get("family") or problem.family
    problem.flops = result.get("flops")
    problem.min_bytes = result.get("min_bytes")
    problem.validated_at = timezone.now()
    problem.save()
    _job_mark_done(job)


def _problem_validation_failed(job, reason: str) -> None:
    problem = Problem.objects.select_for_update().get(pk=job.problem_id)
    if _problem_job_is_stale(problem, job):
        return
    problem.validation_status = Problem.Validation.ERROR
    problem.validation_reason = f"Validation could not run: {reason}"
    problem.validated_at = timezone.now()
    problem.save(update_fields=["validation_status", "validation_reason", "validated_at"])


# === jobs (called by the evaluation worker) ==============================================


def job_failed(job, reason: str) -> None:
    """A job failed for good: tell its owner. Called inside the transaction that failed it."""
    if job.purpose == EvaluationJob.Purpose.VALIDATE:
        _problem_validation_failed(job, reason)
    else:
        _search_job_failed(job, reason)


# === searches ===========================================================================

# Search knobs and the limits the form and the command enforce: (smallest, largest).
SEARCH_KNOB_LIMITS = {
    "rounds": (1, 50),
    "parents_per_round": (1, 20),
    "ideas_per_parent": (1, 20),
    "kernels_per_idea": (1, 20),
    "bank_size": (0, 50),
    "repair_attempts": (0, 3),
}
SEARCH_FORK_OVERRIDES = set(SEARCH_KNOB_LIMITS) | {
    "proposer", "model", "effort", "device", "allow_library", "max_candidates", "max_tokens", "max_cost_usd", "name",
}
SEARCH_EFFORTS = ("low", "medium", "high", "xhigh", "max")  # the Messages API's output_config.effort
RERUN_TOLERANCE = 0.10  # a rerun "reproduces" when its median is within 10% of the original


def _search_check_knobs(knobs: dict) -> None:
    for key, (low, high) in SEARCH_KNOB_LIMITS.items():
        value = knobs.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValidationError(f"{key.replace('_', ' ')} must be a whole number from {low} to {high} (got {value!r}).",
                                  code=key)
    for key in ("max_candidates", "max_tokens"):
        value = knobs.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValidationError(f"{key.replace('_', ' ')} must be a whole number of at least 1, or empty for no limit.",
                                  code=key)
    cost = knobs.get("max_cost_usd")
    if cost is not None and not (isinstance(cost, (int, float)) and 0 < cost < float("inf")):
        raise ValidationError("max cost (USD) must be a positive amount, or empty for no limit.", code="max_cost_usd")
    if knobs.get("device") not in Device.values:
        raise ValidationError(f"Unknown device {knobs.get('device')!r}: choose one of {', '.join(Device.values)}.",
                           code="device")
    if knobs.get("effort") and knobs["effort"] not in SEARCH_EFFORTS:
        raise ValidationError(f"Unknown effort {knobs['effort']!r}: choose one of {', '.join(SEARCH_EFFORTS)}, or leave "
                           "it empty for the model's default.", code="effort")


def _search_check_startable(*, problem: Problem, proposer: str, device: str) -> None:
    if problem.validation_status != Problem.Validation.OK:
        if problem.validation_status in (Problem.Validation.PENDING, Problem.Validation.RUNNING):
            raise ValidationError(
                f"Problem “{problem.name}” is still being validated; start the search once validation is done "
                "(is `python manage.py evaluator` running?).", code="problem")
        raise ValidationError(
            f"Problem “{problem.name}” did not pass validation ({problem.validation_reason or problem.validation_status}); "
            "fix the problem first.", code="problem")
    from .selectors import search_proposer_unavailable

    reason = search_proposer_unavailable(problem=problem, proposer=proposer, device=device)
    if reason:
        raise ValidationError(reason, code="proposer")


@transaction.atomic
def search_start(*, problem: Problem, user, proposer: str, model: str = "", device: str, rounds: int,
                 parents_per_round: int, ideas_per_parent: int, kernels_per_idea: int, bank_size: int = 2,
                 allow_library: bool = False, max_candidates: int | None = None, max_tokens: int | None = None,
                 max_cost_usd: float | None = None, name: str = "", effort: str = "",
                 repair_attempts: int = 1) -> Search:
    """Create a search and queue its first step. Refuses, with the reason, a problem that is not
    validated or a proposer that cannot serve it."""
    knobs = dict(rounds=rounds, parents_per_round=parents_per_round, ideas_per_parent=ideas_per_parent,
                 kernels_per_idea=kernels_per_idea, bank_size=bank_size, repair_attempts=repair_attempts,
                 max_candidates=max_candidates, max_tokens=max_tokens, max_cost_usd=max_cost_usd, device=device)
    _search_check_knobs({**knobs, "effort": effort})
    _search_check_startable(problem=problem, proposer=proposer, device=device)
    search = Search.objects.create(
        problem=problem, created_by=user, proposer=proposer, name=(name or "").strip()[:200],
        model=(model or (settings.ANTHROPIC_MODEL if proposer == Search.Proposer.ANTHROPIC else ""))[:100],
        effort=effort or "", allow_library=bool(allow_library), **knobs,
    )
    _search_publish_status(search)
    engine.kick(search.id)
    return search


def _search_publish_status(search: Search) -> None:
    events.publish(search.id, "search.status", {
        "status": search.status, "stop_reason": search.stop_reason, "current_round": search.current_round,
    })


def _search_locked(search: Search) -> Search:
    return Search.objects.select_for_update().get(pk=search.pk)


def _user_label(user) -> str:
    return getattr(user, "get_username", lambda: "")() or "a user"


# --- who may do what ------------------------------------------------------------------------
# Everyone on the team reads everything and may fork any search. Steering a search (pause,
# resume, cancel, its ideas and hand-written kernels: they spend its budget) belongs to the person
# who started it and to administrators. A quarantined kernel is admitted by a second pair of eyes:
# an administrator, or anyone but the person whose search or kernel it is. user=None is the
# system itself (the headless command, the engine).

def may_steer(search: Search, user) -> bool:
    return user is None or user.is_staff or (search.created_by_id is not None and search.created_by_id == user.id)


def _require_steer(search: Search, user, action: str) -> None:
    if not may_steer(search, user):
        raise PermissionDenied(f"Only the person who started this search, or an administrator, can {action}.")


def may_approve(kernel: Kernel, user) -> bool:
    if user is None or user.is_staff:
        return True
    owners = {kernel.author_id, kernel.search.created_by_id if kernel.search_id else None} - {None}
    return user.id not in owners


@transaction.atomic
def search_pause(*, search: Search, user) -> Search:
    """Stop proposing new work; candidates already queued are still evaluated."""
    _require_steer(search, user, "pause it")
    search = _search_locked(search)
    if search.status not in Search.ACTIVE:
        raise ValidationError(f"Only a queued or running search can be paused; this one is {search.status}.",
                              code="status")
    search.status = Search.Status.PAUSED
    search.stop_reason = f"paused by {_user_label(user)}"
    search.save(update_fields=["status", "stop_reason"])
    _search_publish_status(search)
    return search


@transaction.atomic
def search_resume(*, search: Search, user) -> Search:
    _require_steer(search, user, "resume it")
    search = _search_locked(search)
    if search.status != Search.Status.PAUSED:
        raise ValidationError(f"Only a paused search can be resumed; this one is {search.status}.", code="status")
    _search_check_startable(problem=search.problem, proposer=search.proposer, device=search.device)
    search.status = Search.Status.RUNNING
    search.stop_reason = ""
    search.save(update_fields=["status", "stop_reason"])
    _search_publish_status(search)
    engine.kick(search.id)
    return search


@transaction.atomic
def search_cancel(*, search: Search, user) -> Search:
    """End the search for good. Queued candidates are dropped (marked failed, with the reason);
    one already running still reports its verdict."""
    _require_steer(search, user, "cancel it")
    search = _search_locked(search)
    if search.status in Search.FINISHED:
        raise ValidationError(f"This search has already ended ({search.status}).", code="status")
    search.status = Search.Status.CANCELLED
    search.stop_reason = f"cancelled by {_user_label(user)}"
    search.finished_at = timezone.now()
    search.save(update_fields=["status", "stop_reason", "finished_at"])
    for job in EvaluationJob.objects.select_for_update().filter(
        kernel__search=search, status=EvaluationJob.Status.QUEUED
    ):
        jobs.fail(job, "not evaluated: the search was cancelled")
    _search_publish_status(search)
    return search


@transaction.atomic
def search_fork(*, search: Search, user, from_kernel: Kernel | None = None, from_idea: Idea | None = None,
                **overrides) -> Search:
    """A new search that continues from one kernel (or idea) of another, with the same knobs
    unless overridden. History travels as copies: the kernel's ancestor path (kernels and the
    ideas between them) is copied into the new search as FORK kernels carrying their verdicts
    (their benchmark runs stay with the originals), so the new search's tree and prompts show
    where it came from. Round 1 builds on the copied kernel; a forked idea is implemented
    again in round 1 next to the proposer's new ideas."""
    unknown = set(overrides) - SEARCH_FORK_OVERRIDES
    if unknown:
        raise ValidationError(f"Cannot override {', '.join(sorted(unknown))} when forking.", code="overrides")
    if from_kernel is not None and from_idea is not None:
        raise ValidationError("Fork from a kernel or from an idea, not both.", code="fork")
    if from_idea is not None:
        if from_idea.search_id != search.pk or from_idea.parent_kernel_id is None:
            raise ValidationError("That idea does not belong to this search (or has no parent kernel).", code="fork")
        start = from_idea.parent_kernel
    elif from_kernel is not None:
        if from_kernel.search_id != search.pk:
            raise ValidationError("That kernel does not belong to this search.", code="fork")
        start = from_kernel
    else:
        start = (Kernel.objects.filter(search=search, status=Verdict.CORRECT, quarantined=False,
                                              median_ms__isnull=False).order_by("median_ms").first())
        if start is None:
            raise ValidationError("This search has no correct kernel yet: pick a kernel or an idea to fork from.",
                                  code="fork")
    if not start.source.strip():
        raise ValidationError("That kernel has no source to build on; pick another one.", code="fork")
    knobs = {key: getattr(search, key) for key in SEARCH_FORK_OVERRIDES}
    knobs.update(overrides)
    _search_check_knobs(knobs)
    _search_check_startable(problem=search.problem, proposer=knobs["proposer"], device=knobs["device"])
    fork = Search.objects.create(
        problem=search.problem, created_by=user, forked_from=search, forked_from_kernel=start,
        **{**knobs, "name": (knobs.get("name") or f"Fork of {search}")[:200]},
    )
    start_copy = _search_copy_path(fork, start)
    plan = {"1": {"parents": [start_copy.id], "asked": []}}
    fork.current_round = 1
    fork.round_parents = plan
    fork.save(update_fields=["current_round", "round_parents"])
    if from_idea is not None:
        idea = Idea.objects.create(search=fork, parent_kernel=start_copy, round=1, title=from_idea.title,
                                    description=from_idea.description, origin=from_idea.origin, author=from_idea.author)
        events.publish(fork.id, "idea.created", events.idea_payload(idea))
    _search_publish_status(fork)
    engine.kick(fork.id)
    return fork


def _search_copy_path(fork: Search, kernel: Kernel) -> Kernel:
    """Copy `kernel` and its ancestors (root first) into `fork`; return the copy of `kernel`."""
    path = []
    current = kernel
    while current is not None and len(path) < 100:
        path.append(current)
        current = current.parent
    parent_copy = None
    for original in reversed(path):
        idea_copy = None
        if original.idea_id:
            idea = original.idea
            idea_copy = Idea.objects.create(
                search=fork, parent_kernel=parent_copy, round=0, title=idea.title, description=idea.description,
                origin=idea.origin, author=idea.author,
            )
            events.publish(fork.id, "idea.created", events.idea_payload(idea_copy))
        parent_copy = Kernel.objects.create(
            problem_id=original.problem_id, search=fork, idea=idea_copy, parent=parent_copy, round=0,
            name=f"{original.name or 'kernel'} (#{original.id} of search {original.search_id})"[:200],
            source=original.source, origin=Kernel.Origin.FORK, author=original.author,
            status=original.status, reason=original.reason, quarantined=original.quarantined,
            median_ms=original.median_ms, speedup_vs_eager=original.speedup_vs_eager,
            speedup_vs_compile=original.speedup_vs_compile, precision=original.precision,
            device_name=original.device_name, verified=original.verified, evaluated_at=original.evaluated_at,
        )
        events.publish(fork.id, "kernel.created", events.kernel_payload(parent_copy))
    return parent_copy


@transaction.atomic
def idea_add(*, search: Search, user, parent_kernel: Kernel, title: str, description: str) -> Idea:
    """A person's idea for a parent kernel, implemented K times by the proposer like its own."""
    _require_steer(search, user, "add ideas to it")
    search = _search_locked(search)
    if search.status in Search.FINISHED:
        raise ValidationError(f"This search has ended ({search.status}); fork it to try a new idea.", code="status")
    if search.proposer == Search.Proposer.PLAYBOOK:
        raise ValidationError(
            "This search uses the built-in playbook, which only implements its own ideas: a new idea needs an LLM "
            "to write it. Fork the search with the Anthropic proposer, or submit a hand-written kernel.",
            code="proposer")
    if parent_kernel.search_id != search.pk:
        raise ValidationError("The parent kernel must belong to this search.", code="parent_kernel")
    if not parent_kernel.source.strip():
        raise ValidationError("That kernel has no source to build on; pick another parent.", code="parent_kernel")
    title = (title or "").strip()
    if not title:
        raise ValidationError("Give the idea a title.", code="title")
    if len(title) > 300:
        raise ValidationError("Keep the title under 300 characters; put the details in the description.", code="title")
    idea = Idea.objects.create(search=search, parent_kernel=parent_kernel, round=search.current_round, title=title,
                                description=(description or "").strip(), origin=Idea.Origin.USER, author=user)
    events.publish(search.id, "idea.created", events.idea_payload(idea))
    engine.kick(search.id)
    return idea


@transaction.atomic
def kernel_submit(*, user, problem: Problem, source: str, search: Search | None = None,
                  parent: Kernel | None = None, name: str = "") -> Kernel:
    """A hand-written kernel: evaluated like any candidate; inside a search it joins the tree as a user node."""
    source = source or ""
    if not source.strip():
        raise ValidationError("The kernel source is empty.", code="source")
    if len(source.encode()) > settings.KERNEL_SOURCE_MAX_BYTES:
        raise ValidationError(f"The kernel source is larger than {settings.KERNEL_SOURCE_MAX_BYTES} bytes.",
                              code="source")
    if "ModelNew" not in source:
        raise ValidationError("A kernel module must define `class ModelNew(nn.Module)` (see the kernel format).",
                              code="source")
    if problem.validation_status == Problem.Validation.INVALID:
        raise ValidationError("This problem failed validation; fix it before submitting kernels.", code="problem")
    if search is not None:
        _require_steer(search, user, "add kernels to it (submit it to the problem instead, or fork the search)")
    round_number = 0
    if search is not None:
        search = _search_locked(search)
        if search.problem_id != problem.pk:
            raise ValidationError("The search is on a different problem.", code="search")
        round_number = search.current_round
    if parent is not None and (search is None or parent.search_id != search.pk):
        raise ValidationError("The parent kernel must belong to the same search.", code="parent")
    kernel = Kernel.objects.create(
        problem=problem, search=search, parent=parent, round=round_number, name=(name or "").strip()[:200],
        source=source, origin=Kernel.Origin.USER, author=user,
    )
    purpose = EvaluationJob.Purpose.SEARCH if search is not None else EvaluationJob.Purpose.MANUAL
    options = {"allow_library": search.allow_library} if search is not None else {}
    jobs.enqueue_kernel(kernel, purpose=purpose, options=options, priority=1)
    if search is not None:
        events.publish(search.id, "kernel.created", events.kernel_payload(kernel))
    return kernel


def _verdict_status(result: dict) -> tuple[str, str]:
    status = result.get("status")
    if status in Verdict.values and status not in (Verdict.PENDING, Verdict.EVALUATING, Verdict.NO_CODE,
                                                    Verdict.FAILED):
        return status, result.get("reason") or ""
    return Verdict.CRASHED, f"the runner answered with an unknown verdict {status!r}"


@transaction.atomic
def kernel_record_verdict(*, kernel: Kernel, job: EvaluationJob, result: dict) -> BenchmarkRun:
    """Store one runner verdict (the evaluation worker calls this). A second report for the same
    job returns the first run and changes nothing."""
    job = EvaluationJob.objects.select_for_update().get(pk=job.pk)
    existing = BenchmarkRun.objects.filter(job=job).first()
    if existing is not None:
        return existing
    kernel = Kernel.objects.select_for_update().get(pk=kernel.pk)
    status, reason = _verdict_status(result)
    environment = result.get("environment") or {}
    timing = result.get("timing") or {}
    compile_info = result.get("compile") or {}
    run = BenchmarkRun.objects.create(
        kernel=kernel, job=job, purpose=job.purpose, status=status, reason=reason,
        quarantined=bool(result.get("quarantined")), quarantine_reason=result.get("quarantine_reason") or "",
        seed=result.get("seed"), precision=result.get("precision") or "",
        compile_seconds=compile_info.get("seconds"), compile_log=compile_info.get("log") or "",
        correctness=result.get("correctness"), timing=result.get("timing"), baseline=result.get("baseline"),
        environment=environment, median_ms=timing.get("median_ms") if status == Verdict.CORRECT else None,
        speedup_vs_eager=result.get("speedup_vs_eager"), speedup_vs_compile=result.get("speedup_vs_compile"),
        device_name=environment.get("device_name") or "", worker=job.lease_owner, result=result,
    )
    job.status = EvaluationJob.Status.DONE
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "finished_at"])
    if job.purpose == EvaluationJob.Purpose.RERUN:
        kernel.verified = _kernel_reproduced(kernel, run)
        kernel.save(update_fields=["verified"])
    else:
        kernel.status, kernel.reason = status, reason
        kernel.quarantined = run.quarantined
        kernel.median_ms = run.median_ms
        kernel.speedup_vs_eager, kernel.speedup_vs_compile = run.speedup_vs_eager, run.speedup_vs_compile
        kernel.precision, kernel.device_name = run.precision, run.device_name
        kernel.evaluated_at = timezone.now()
        kernel.save(update_fields=["status", "reason", "quarantined", "median_ms", "speedup_vs_eager",
                                   "speedup_vs_compile", "precision", "device_name", "evaluated_at"])
    if kernel.search_id:
        if job.purpose == EvaluationJob.Purpose.SEARCH:
            Search.objects.filter(pk=kernel.search_id).update(candidates_evaluated=F("candidates_evaluated") + 1)
        events.publish(kernel.search_id, "kernel.updated", events.kernel_payload(kernel))
        if job.purpose == EvaluationJob.Purpose.SEARCH:
            engine._publish_progress(kernel.search_id)
            engine.kick(kernel.search_id)
    return run


def _kernel_reproduced(kernel: Kernel, rerun: BenchmarkRun) -> bool:
    """A rerun reproduces the kernel when, with a different seed on the same GPU model, it is
    correct again and its median is within 10% of the recorded one."""
    original = kernel.runs.exclude(purpose=EvaluationJob.Purpose.RERUN).exclude(pk=rerun.pk).order_by("-id").first()
    if rerun.status != Verdict.CORRECT or kernel.status != Verdict.CORRECT or not kernel.median_ms:
        return False
    if not rerun.median_ms or (original is not None and original.seed == rerun.seed):
        return False
    if kernel.device_name and rerun.device_name != kernel.device_name:
        return False
    return abs(rerun.median_ms - kernel.median_ms) <= RERUN_TOLERANCE * kernel.median_ms


@transaction.atomic
def kernel_request_rerun(*, kernel: Kernel, user) -> EvaluationJob:
    """Evaluate a correct kernel again with a fresh seed; its verdict sets `verified`."""
    kernel = Kernel.objects.select_for_update().get(pk=kernel.pk)
    if kernel.status != Verdict.CORRECT:
        raise ValidationError("Only a correct kernel can be rerun for verification.", code="status")
    waiting = kernel.jobs.filter(purpose=EvaluationJob.Purpose.RERUN,
                                 status__in=[EvaluationJob.Status.QUEUED, EvaluationJob.Status.LEASED]).first()
    if waiting is not None:
        return waiting
    used = set(kernel.runs.values_list("seed", flat=True))
    seed = random.SystemRandom().randrange(1, 2**62)
    while seed in used:
        seed = random.SystemRandom().randrange(1, 2**62)
    options = {"allow_library": kernel.search.allow_library} if kernel.search_id else {}
    return jobs.enqueue_kernel(kernel, purpose=EvaluationJob.Purpose.RERUN, seed=seed, priority=2, options=options)


def _search_job_failed(job: EvaluationJob, reason: str) -> None:
    """A kernel's job failed for good (it kept killing its worker, or the search was cancelled)."""
    if job.purpose == EvaluationJob.Purpose.RERUN or job.kernel_id is None:
        return
    kernel = Kernel.objects.select_for_update().get(pk=job.kernel_id)
    if BenchmarkRun.objects.filter(job=job).exists():
        return
    kernel.status, kernel.reason = Verdict.FAILED, reason
    kernel.save(update_fields=["status", "reason"])
    if kernel.search_id:
        events.publish(kernel.search_id, "kernel.updated", events.kernel_payload(kernel))
        engine.kick(kernel.search_id)


# === sharing and leaderboards ===========================================================


_SHARE_TARGETS = {
    ShareLink.Kind.LEADERBOARD: ("problem",),
    ShareLink.Kind.SEARCH: ("search",),
    ShareLink.Kind.KERNEL: ("kernel",),
    ShareLink.Kind.COMPARE: ("kernel", "other_kernel"),
}


def share_link_create(*, user, kind: str, problem=None, search=None, kernel=None, other_kernel=None,
                      device_name: str = "", label: str = "") -> tuple[ShareLink, str]:
    """A read-only link for people without a login. The token is returned once and only its
    SHA-256 is stored, so a database leak does not leak working links."""
    given = {"problem": problem, "search": search, "kernel": kernel, "other_kernel": other_kernel}
    if kind not in _SHARE_TARGETS:
        raise ValidationError(f"Unknown kind of share link {kind!r}: use one of {', '.join(_SHARE_TARGETS)}.")
    needed = _SHARE_TARGETS[kind]
    missing = [name for name in needed if given[name] is None]
    extra = [name for name, value in given.items() if value is not None and name not in needed]
    if missing or extra:
        raise ValidationError(f"A {kind} link needs exactly: {', '.join(needed)}.")
    if len(label) > 200:
        raise ValidationError("The label is too long: keep it under 200 characters.")
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        link = ShareLink.objects.create(token_hash=share_token_hash(token), kind=kind, label=label.strip(),
                                         device_name=device_name if kind == ShareLink.Kind.LEADERBOARD else "",
                                         created_by=user, **{k: v for k, v in given.items() if v is not None})
    return link, token


def share_link_revoke(*, link: ShareLink, user) -> ShareLink:
    """Stop a link from working (its page answers 404 afterwards). Its creator or staff may do it."""
    if not (user.is_staff or (link.created_by_id is not None and link.created_by_id == user.id)):
        raise PermissionDenied("Only the person who created this link, or an administrator, can revoke it.")
    with transaction.atomic():
        if link.revoked_at is None:
            link.revoked_at = timezone.now()
            link.save(update_fields=["revoked_at"])
    return link


def kernel_approve(*, kernel: Kernel, user) -> Kernel:
    """Admit a quarantined (implausibly fast) kernel to the ranking, once a verified rerun in a
    fresh process reproduced it."""
    with transaction.atomic():
        kernel = Kernel.objects.select_for_update().get(pk=kernel.pk)
        if not kernel.quarantined:
            raise ValidationError("This kernel is not quarantined: it is ranked already when correct.")
        if kernel.status != "correct":
            raise ValidationError("Only a correct kernel can be approved.")
        if not kernel.verified:
            raise ValidationError("Request a verified rerun first: a quarantined kernel can be approved only after "
                                   "a rerun with a new seed in a fresh process reproduced its time within 10%.")
        if not may_approve(kernel, user):
            raise PermissionDenied("A second person approves a quarantined kernel: ask a teammate or an administrator "
                                   "(you started its search or wrote it).")
        if kernel.approved_by_id is None:
            kernel.approved_by = user
            kernel.approved_at = timezone.now()
            kernel.save(update_fields=["approved_by", "approved_at"])
            if kernel.search_id:
                events.publish(kernel.search_id, "kernel.updated", events.kernel_payload(kernel))
    return kernel
