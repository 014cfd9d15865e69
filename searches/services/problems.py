"""Writes on problems: create, edit (a new version once it has results), validation."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from evaluation import queue
from evaluation.models import EvaluationJob
from evaluation.scheduling import Priority
from searches.models import Device, Problem
from searches.problem_checks import check_problem_source

from . import events
from .permissions import require_edit_problem
from .problem_fit import check_fits_workers

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


def _problem_queue_validation(problem: Problem, user) -> EvaluationJob:
    """Reset the problem's validation and queue a sandboxed run (interactive: someone waits on its
    page). Older queued runs are dropped: their result would describe a source the problem no longer has."""
    EvaluationJob.objects.filter(
        problem=problem, purpose=EvaluationJob.Purpose.VALIDATE, status=EvaluationJob.Status.QUEUED
    ).update(status=EvaluationJob.Status.FAILED, last_error="superseded by an edit", finished_at=timezone.now())
    problem.validation_status = Problem.Validation.PENDING
    problem.validation_reason = ""
    problem.validation = None
    problem.validated_at = None
    problem.flops = None
    problem.min_bytes = None
    return queue.enqueue_validation(problem, priority=Priority.INTERACTIVE, requested_by=user)


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
    validate: bool = True,
    priority: Priority = Priority.INTERACTIVE,
) -> Problem:
    """Save a problem after the static checks and queue its sandboxed validation (unless
    `validate` is false: a bulk import stores problems to validate later, on request). The
    validation counts against the person's cap: over it, OverQuota and nothing is saved."""
    check_problem_source(source)
    _problem_check_fields(name=name, device=device, atol=atol, rtol=rtol)
    if validate:  # a bulk import stores what it is given; its report shows each problem's size
        check_fits_workers(source, device)
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
    if validate:
        queue.enqueue_validation(problem, priority=priority, requested_by=user)
    return problem


@transaction.atomic
def problem_update(*, problem: Problem, user, **fields) -> Problem:
    """Edit a problem (its creator or an administrator: PermissionDenied for anyone else). One with searches or kernels is never changed in place: the edit becomes
    a new version of the same lineage and the old version keeps its results. Returns the
    problem as it is now (the new version, when one was made)."""
    unknown = set(fields) - set(PROBLEM_EDITABLE_FIELDS)
    if unknown:
        raise TypeError(f"problem_update cannot change {', '.join(sorted(unknown))}")
    current = Problem.objects.select_for_update().get(pk=problem.pk)
    require_edit_problem(current, user)
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
        _problem_queue_validation(current, user)
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
        queue.enqueue_validation(new, priority=Priority.INTERACTIVE, requested_by=user)
    return new


@transaction.atomic
def problem_request_validation(*, problem: Problem, user) -> EvaluationJob:
    """Validate the problem again, e.g. after its evaluator died or to refresh its baselines."""
    problem = Problem.objects.select_for_update().get(pk=problem.pk)
    job = _problem_queue_validation(problem, user)
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
    events.publish_validation(problem)


def problem_validation_failed(*, job, reason: str) -> None:
    """Its validation job failed for good: the problem says why. Inside a transaction."""
    problem = Problem.objects.select_for_update().get(pk=job.problem_id)
    if _problem_job_is_stale(problem, job):
        return
    problem.validation_status = Problem.Validation.ERROR
    problem.validation_reason = f"Validation could not run: {reason}"
    problem.validated_at = timezone.now()
    problem.save(update_fields=["validation_status", "validation_reason", "validated_at"])
    events.publish_validation(problem)
