"""Reads on problems: lists, versions, validation state."""

import uuid

from django.conf import settings
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce

from evaluation.models import EvaluationJob
from evaluation.selectors import evaluator_seen
from searches.models import Device, Problem, Search

from .queue import job_progress, queue_position, queue_wait_text, run_estimate_text


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


def devices_served() -> set[str]:
    """The devices some evaluator here serves: this host's own (RUNNER_DEVICE) and any seen lately."""
    return {settings.RUNNER_DEVICE} | {device for device in Device.values if evaluator_seen(device)}


def default_device() -> str:
    """Where imported problems run unless told: CUDA when a CUDA worker serves, else the CPU."""
    return Device.CUDA if Device.CUDA in devices_served() else Device.CPU


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
    if job is None and problem.device == Device.CUDA and not evaluator_seen(Device.CUDA):
        return {"status": "pending", "badge": "pending", "label": "Needs a CUDA worker", "pending": False,
                "message": "Not queued: no CUDA worker serves this install. Once one runs, ask for a validation "
                           "with “Validate again”."}
    if job is None or job.status in (EvaluationJob.Status.DONE, EvaluationJob.Status.FAILED):
        return {"status": "pending", "badge": "pending", "label": "Not queued", "pending": False,
                "message": "No validation is queued for this problem. Ask for one with “Validate again”."}
    if job.status == EvaluationJob.Status.LEASED:
        return {"status": "running", "badge": "running", "label": "Validating…", "pending": True,
                "message": f"In a sandbox on {job.lease_owner or 'an evaluator'}: the reference, then its eager "
                           f"and torch.compile baselines. {job_progress(job)['text']}"}
    place = queue_wait_text(queue_position(job)) if evaluator_seen(problem.device) else ""
    if problem.device == Device.CUDA:
        message = "Waiting for a CUDA worker: this problem runs on a GPU, so a CPU evaluator will not take it."
        if not place:
            message += (" No CUDA evaluator has reported in the last two minutes; start one on a GPU host with "
                        "RUNNER_DEVICE=cuda python manage.py evaluator.")
        return {"status": "queued", "badge": "queued", "label": "Waiting for a CUDA worker", "pending": True,
                "message": f"{message} {place}".strip(), "queue": place}
    message = ""  # the label says it is queued; the message says where and for how long
    if not place:
        message = "No CPU evaluator has reported in the last two minutes; is python manage.py evaluator running?"
    else:
        place += run_estimate_text(problem.device, "validate")
    return {"status": "queued", "badge": "queued", "label": "Queued for validation", "pending": True,
            "message": f"{message} {place}".strip(), "queue": place}


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
