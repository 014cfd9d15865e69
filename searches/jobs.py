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


def renew(job_id: int, worker_name: str) -> bool:
    """Extend the lease of a job this worker still holds. False when it lost the job (its lease
    expired and another worker claimed it, or it was failed meanwhile)."""
    expires = timezone.now() + timedelta(seconds=settings.JOB_LEASE_SECONDS)
    with transaction.atomic():
        updated = EvaluationJob.objects.filter(
            pk=job_id, status=EvaluationJob.Status.LEASED, lease_owner=worker_name
        ).update(lease_expires_at=expires)
    return updated == 1


def release(job: EvaluationJob, worker_name: str, *, error: str = "", count_attempt: bool = False) -> bool:
    """Hand a leased job back to the queue. A worker that stops on request (SIGTERM) does not
    count the attempt against the job; a run that broke with an error does."""
    with transaction.atomic():
        fresh = EvaluationJob.objects.select_for_update().filter(
            pk=job.pk, status=EvaluationJob.Status.LEASED, lease_owner=worker_name
        ).first()
        if fresh is None:
            return False
        if count_attempt and fresh.attempts >= fresh.max_attempts:
            fail(fresh, error or f"gave up after {fresh.attempts} attempts")
            return True
        fresh.status = EvaluationJob.Status.QUEUED
        fresh.lease_owner = ""
        fresh.lease_expires_at = None
        if not count_attempt:
            fresh.attempts = max(0, fresh.attempts - 1)
        if error:
            fresh.last_error = error
        fresh.save(update_fields=["status", "lease_owner", "lease_expires_at", "attempts", "last_error"])
    return True


def expire_leases_of(worker_name: str) -> int:
    """A worker starting under a name that already holds leases is a restart of a dead one:
    make those leases claimable now instead of waiting for them to run out. The killed run
    still counts as an attempt (it may be the job that killed the worker)."""
    with transaction.atomic():
        return EvaluationJob.objects.filter(
            status=EvaluationJob.Status.LEASED, lease_owner=worker_name
        ).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def pending_for_search(search_id: int):
    """Search jobs not finished yet (queued or running)."""
    return EvaluationJob.objects.filter(
        kernel__search_id=search_id,
        purpose=EvaluationJob.Purpose.SEARCH,
        status__in=[EvaluationJob.Status.QUEUED, EvaluationJob.Status.LEASED],
    )
