"""Claiming evaluation jobs under a lease: each job is taken atomically by one worker of its
device; the worker renews the lease while the job runs.

`attempts` counts claims. A worker killed mid-run never reports, its lease expires, and the
next claim counts another attempt; a job that used up `max_attempts` fails for good.
"""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from searches.models import EvaluationJob
from searches.services.jobs import job_fail


# A job builds for long on the host before it needs the device: a C++/CUDA extension of its kernel, or
# a validation (torch.compile's baseline). The rest (NVRTC, cupy, Triton, plain C) ask for it at once.
BUILD_MARKERS = ("load_inline", "cpp_extension")
_BUILDS = Q(purpose=EvaluationJob.Purpose.VALIDATE) | Q(kernel__source__contains=BUILD_MARKERS[0]) | Q(
    kernel__source__contains=BUILD_MARKERS[1])


def builds(job: EvaluationJob) -> bool:
    return EvaluationJob.objects.filter(_BUILDS, pk=job.pk).exists()


def claim(worker_name: str, device: str, *, quick: bool = True) -> EvaluationJob | None:
    """Take the next runnable job for `device`: queued, or leased with an expired lease.
    Returns None when there is none. Jobs out of attempts are failed on the way.
    `quick=False`: only a job that builds (the worker's quick jobs in flight are enough)."""
    now = timezone.now()
    runnable = Q(status=EvaluationJob.Status.QUEUED) | Q(
        status=EvaluationJob.Status.LEASED, lease_expires_at__lt=now
    )
    with transaction.atomic():
        candidates = EvaluationJob.objects.select_for_update(skip_locked=True, of=("self",)).filter(
            runnable, device=device)
        if not quick:
            candidates = candidates.filter(_BUILDS)
        for job in candidates.order_by("-priority", "id")[:20]:
            if job.attempts >= job.max_attempts:
                job_fail(job=job, reason=f"gave up after {job.attempts} attempts: the evaluation kept killing its worker")
                continue
            job.status = EvaluationJob.Status.LEASED
            job.attempts += 1
            job.lease_owner = worker_name
            job.lease_expires_at = now + timedelta(seconds=settings.JOB_LEASE_SECONDS)
            job.started_at = job.started_at or now
            job.save(update_fields=["status", "attempts", "lease_owner", "lease_expires_at", "started_at"])
            return job
    return None


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
            job_fail(job=fresh, reason=error or f"gave up after {fresh.attempts} attempts")
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
