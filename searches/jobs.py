"""Durable evaluation jobs: every sandboxed run (problem validation, kernel evaluation) is a
row here, claimed atomically by an evaluation worker of the right device under a lease.

`attempts` counts claims. A worker killed mid-run never reports, its lease expires, and the
next claim counts another attempt; a job that used up `max_attempts` fails for good.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .models import EvaluationJob, Kernel, Problem


def enqueue_validation(problem: Problem) -> EvaluationJob:
    return EvaluationJob.objects.create(
        problem=problem,
        purpose=EvaluationJob.Purpose.VALIDATE,
        device=problem.device,
        priority=10,  # people wait on the page for it
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


def claim(worker_name: str, device: str) -> EvaluationJob | None:
    """Take the next runnable job for `device`: queued, or leased with an expired lease.
    Returns None when there is none. Jobs out of attempts are failed on the way."""
    now = timezone.now()
    runnable = Q(status=EvaluationJob.Status.QUEUED) | Q(
        status=EvaluationJob.Status.LEASED, lease_expires_at__lt=now
    )
    with transaction.atomic():
        candidates = EvaluationJob.objects.select_for_update(skip_locked=True).filter(runnable, device=device)
        for job in candidates.order_by("-priority", "id")[:20]:
            if job.attempts >= job.max_attempts:
                fail(job, f"gave up after {job.attempts} attempts: the evaluation kept killing its worker")
                continue
            job.status = EvaluationJob.Status.LEASED
            job.attempts += 1
            job.lease_owner = worker_name
            job.lease_expires_at = now + timedelta(seconds=settings.JOB_LEASE_SECONDS)
            job.started_at = job.started_at or now
            job.save(update_fields=["status", "attempts", "lease_owner", "lease_expires_at", "started_at"])
            return job
    return None


def fail(job: EvaluationJob, reason: str) -> None:
    """Mark a job failed for good and let its owner (problem or kernel) know. Call inside a transaction."""
    job.status = EvaluationJob.Status.FAILED
    job.last_error = reason
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "last_error", "finished_at"])
    from . import services

    services.job_failed(job, reason)
