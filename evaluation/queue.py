"""The queue of evaluation jobs: every sandboxed run (problem validation, kernel evaluation)
is an EvaluationJob row, queued here by the services and the engine and claimed by workers
(evaluation.leases)."""

from django.conf import settings
from django.utils import timezone

from searches.models import EvaluationJob, Kernel, Problem


def enqueue_validation(problem: Problem, *, priority: int = 10) -> EvaluationJob:
    # 10 by default: people wait on the page for it; a suite's bulk validation asks for less.
    return EvaluationJob.objects.create(
        problem=problem,
        purpose=EvaluationJob.Purpose.VALIDATE,
        device=problem.device,
        priority=priority,
        max_attempts=settings.JOB_MAX_ATTEMPTS,
    )


def enqueue_kernel(kernel: Kernel, *, purpose: str = EvaluationJob.Purpose.SEARCH, seed=None, priority=0,
                   options: dict | None = None) -> EvaluationJob:
    device = kernel.search.device if kernel.search_id else kernel.problem.device
    return EvaluationJob.objects.create(
        problem_id=kernel.problem_id,
        kernel=kernel,
        purpose=purpose,
        device=device,
        seed=seed,
        priority=priority,
        options=options or {},
        max_attempts=settings.JOB_MAX_ATTEMPTS,
    )


def pending_for_search(search_id: int):
    """Search jobs not finished yet (queued or running)."""
    return EvaluationJob.objects.filter(
        kernel__search_id=search_id,
        purpose=EvaluationJob.Purpose.SEARCH,
        status__in=[EvaluationJob.Status.QUEUED, EvaluationJob.Status.LEASED],
    )


def mark_failed(job: EvaluationJob, reason: str) -> None:
    """The job's own row only; `searches.services.jobs.job_fail` also tells its owner."""
    job.status = EvaluationJob.Status.FAILED
    job.last_error = reason
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "last_error", "finished_at"])
