"""The queue of evaluation jobs: every sandboxed run (problem validation, kernel evaluation)
is an EvaluationJob row, queued here by the services and the engine and claimed by workers
(evaluation.leases), highest priority class first (evaluation/scheduling.py).

The problems, kernels and searches are the caller's objects (the `searches` app's): this module reads
the fields it needs from them and never imports their classes."""

from django.conf import settings
from django.utils import timezone

from . import scheduling, sink
from .models import EvaluationJob
from .scheduling import Priority


def enqueue_validation(problem, *, priority: Priority = Priority.INTERACTIVE, requested_by=None) -> EvaluationJob:
    """A problem's validation; `requested_by` (a person) counts it against their cap, and OverQuota
    refuses it when they are at the cap (evaluation/scheduling.py)."""
    scheduling.require_job_room(requested_by)
    return EvaluationJob.objects.create(
        problem=problem,
        purpose=EvaluationJob.Purpose.VALIDATE,
        device=problem.device,
        priority=int(priority),
        requested_by=requested_by if getattr(requested_by, "is_authenticated", False) else None,
        max_attempts=settings.JOB_MAX_ATTEMPTS,
    )


def enqueue_kernel(kernel, *, purpose: str = EvaluationJob.Purpose.SEARCH, seed=None,
                   priority: Priority = Priority.SEARCH, options: dict | None = None,
                   requested_by=None) -> EvaluationJob:
    """A kernel's evaluation; the engine's own candidates have no `requested_by` and no cap."""
    scheduling.require_job_room(requested_by)
    device = kernel.search.device if kernel.search_id else kernel.problem.device
    return EvaluationJob.objects.create(
        problem_id=kernel.problem_id,
        kernel=kernel,
        purpose=purpose,
        device=device,
        seed=seed,
        priority=int(priority),
        options=options or {},
        requested_by=requested_by if getattr(requested_by, "is_authenticated", False) else None,
        max_attempts=settings.JOB_MAX_ATTEMPTS,
    )


def enqueue_tool(search, *, tool: str, source: str) -> EvaluationJob:
    """An agent's tool run on a draft (compile, check or profile): no kernel row, one attempt, and
    ahead of search candidates, since a model's call waits on it."""
    return EvaluationJob.objects.create(
        problem_id=search.problem_id, search=search, purpose=EvaluationJob.Purpose.TOOL, device=search.device,
        priority=int(Priority.INTERACTIVE), max_attempts=1,
        options={"tool": tool, "source": source, "allow_library": search.allow_library},
    )


def pending_for_search(search_id: int):
    """Search jobs not finished yet (queued or running)."""
    return EvaluationJob.objects.filter(
        kernel__search_id=search_id,
        purpose=EvaluationJob.Purpose.SEARCH,
        status__in=EvaluationJob.UNFINISHED,
    )


def mark_failed(job: EvaluationJob, reason: str) -> None:
    """The job's own row only; `fail` also tells its owner."""
    job.status = EvaluationJob.Status.FAILED
    job.last_error = reason
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "last_error", "finished_at"])


def fail(job: EvaluationJob, reason: str, reason_code: str = "") -> None:
    """Fail the job for good and tell its owner through the sink (its problem or kernel learns why).
    Call inside a transaction: with no sink registered it raises NoSink and the row is not failed."""
    owner = sink.current()
    mark_failed(job, reason)
    owner.job_failed(job, reason, reason_code)
