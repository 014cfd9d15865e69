"""Claiming evaluation jobs under a lease: each job is taken atomically by one worker of its
device; the worker renews the lease while the job runs.

A job whose holder died is claimable again as soon as the holder's heartbeat is three beats old
(or its lease ran out, whichever comes first). What the death costs depends on how far it got:
- the sandbox had been given the job (`run_started_at`): the candidate may be what killed its
  worker, so the attempt counts; a job that used up `max_attempts` fails for good;
- before that (database, broker or disk trouble, an evaluator stopped from outside): the attempt
  is handed back and `infra_attempts` counts instead, up to `settings.JOB_MAX_INFRA_ATTEMPTS`.
A holder that lost its job (another worker claimed it) is fenced: `renew` and `holds` answer
False, and a verdict is recorded only under `held_for_record`, so one job gets one verdict.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from . import queue
from .models import EvaluationJob, Worker

# A job builds for long on the host before it needs the device: a C++/CUDA extension of its kernel, or
# a validation (torch.compile's baseline). The rest (NVRTC, cupy, Triton, plain C) ask for it at once.
BUILD_MARKERS = ("load_inline", "cpp_extension")
_BUILDS = Q(purpose=EvaluationJob.Purpose.VALIDATE) | Q(kernel__source__contains=BUILD_MARKERS[0]) | Q(
    kernel__source__contains=BUILD_MARKERS[1]) | Q(  # an agent's tool run on such a draft too
    purpose=EvaluationJob.Purpose.TOOL, options__source__icontains=BUILD_MARKERS[0]) | Q(
    purpose=EvaluationJob.Purpose.TOOL, options__source__icontains=BUILD_MARKERS[1])
# Beats an evaluator may miss before it is taken for dead (the evaluator name check uses it too).
STALE_AFTER_BEATS = 3


def builds(job: EvaluationJob) -> bool:
    return EvaluationJob.objects.filter(_BUILDS, pk=job.pk).exists()


def stale_before(now) -> datetime:
    """A heartbeat older than this is a dead evaluator's."""
    return now - timedelta(seconds=STALE_AFTER_BEATS * Worker.HEARTBEAT_SECONDS)


def claim(worker_name: str, device: str, *, quick: bool = True) -> EvaluationJob | None:
    """Take the next runnable job for `device`: queued, or leased by a worker that is gone (its
    lease ran out or its heartbeat is stale). Returns None when there is none. Jobs out of
    attempts are failed on the way.
    `quick=False`: only a job that builds (the worker's quick jobs in flight are enough)."""
    now = timezone.now()
    dead_owners = Worker.objects.filter(heartbeat_at__lt=stale_before(now)).values("name")
    runnable = Q(status=EvaluationJob.Status.QUEUED) | (Q(status=EvaluationJob.Status.LEASED) & (
        Q(lease_expires_at__lt=now) | Q(lease_owner__in=dead_owners)))
    with transaction.atomic():
        candidates = EvaluationJob.objects.select_for_update(skip_locked=True, of=("self",)).filter(
            runnable, device=device)
        if not quick:
            candidates = candidates.filter(_BUILDS)
        for job in candidates.order_by("-priority", "id")[:20]:
            if job.status == EvaluationJob.Status.LEASED:
                _count_dead_holder(job)
            if job.attempts >= job.max_attempts:
                _fail(job, f"gave up after {job.attempts} attempts: the evaluation kept killing its worker")
                continue
            if job.infra_attempts >= settings.JOB_MAX_INFRA_ATTEMPTS:
                _fail(job, _infra_gave_up(job))
                continue
            job.status = EvaluationJob.Status.LEASED
            job.attempts += 1
            job.lease_owner = worker_name
            job.lease_expires_at = now + timedelta(seconds=settings.JOB_LEASE_SECONDS)
            job.started_at = job.started_at or now
            job.run_started_at = None
            job.save(update_fields=["status", "attempts", "infra_attempts", "last_error", "lease_owner",
                                    "lease_expires_at", "started_at", "run_started_at"])
            return job
    return None


def _count_dead_holder(job: EvaluationJob) -> None:
    """The job's holder died. Before its sandbox ran the job, the failure was the evaluator's,
    not the job's: hand the attempt back and count an infrastructure failure."""
    if job.run_started_at is not None:
        job.last_error = f"its evaluator {job.lease_owner!r} died while running it"
        return
    job.attempts = max(0, job.attempts - 1)
    job.infra_attempts += 1
    job.last_error = f"the evaluator {job.lease_owner!r} stopped before it ran the job"


def _fail(job: EvaluationJob, reason: str) -> None:
    job.save(update_fields=["attempts", "infra_attempts"])  # the counts it failed with, kept
    queue.fail(job, reason)


def _infra_gave_up(job: EvaluationJob) -> str:
    return (f"the evaluators failed {job.infra_attempts} times before running it: "
            f"{job.last_error or 'no error was recorded'}")


def mark_run_started(job_id: int, worker_name: str) -> bool:
    """Just before the sandbox is given the job: from now on a death of the holder spends an
    attempt. False when the worker does not hold the job any more (it must not run it)."""
    with transaction.atomic():
        return EvaluationJob.objects.filter(
            pk=job_id, status=EvaluationJob.Status.LEASED, lease_owner=worker_name
        ).update(run_started_at=timezone.now()) == 1


def holds(job_id: int, worker_name: str) -> bool:
    """The worker still holds the job (a read, for a check at every heartbeat)."""
    return EvaluationJob.objects.filter(
        pk=job_id, status=EvaluationJob.Status.LEASED, lease_owner=worker_name).exists()


def renew(job_id: int, worker_name: str) -> bool:
    """Extend the lease of a job this worker still holds. False when it lost the job (another
    worker claimed it after its lease ran out or its heartbeat went stale, or it was failed)."""
    expires = timezone.now() + timedelta(seconds=settings.JOB_LEASE_SECONDS)
    with transaction.atomic():
        updated = EvaluationJob.objects.filter(
            pk=job_id, status=EvaluationJob.Status.LEASED, lease_owner=worker_name
        ).update(lease_expires_at=expires)
    return updated == 1


def held_for_record(job_id: int, worker_name: str) -> bool:
    """Inside the transaction that records the job's verdict: True when this worker still holds
    the job, and then no other worker can claim it before that transaction ends (the conditional
    update takes the row's lock, SQLite's write lock). False: the verdict must be dropped."""
    assert transaction.get_connection().in_atomic_block, "call inside the verdict's transaction"
    return renew(job_id, worker_name)


def release(job: EvaluationJob, worker_name: str, *, error: str = "", count_attempt: bool = False,
            count_infra: bool = False) -> bool:
    """Hand a leased job back to the queue. A worker that stops on request (SIGTERM) does not
    count the attempt against the job; a run that broke with an error does; a failure of the
    evaluator's own before the run began (`count_infra`) counts an infrastructure failure."""
    with transaction.atomic():
        fresh = EvaluationJob.objects.select_for_update().filter(
            pk=job.pk, status=EvaluationJob.Status.LEASED, lease_owner=worker_name
        ).first()
        if fresh is None:
            return False
        if count_attempt and fresh.attempts >= fresh.max_attempts:
            queue.fail(fresh, error or f"gave up after {fresh.attempts} attempts")
            return True
        if error:
            fresh.last_error = error
        if count_infra:
            fresh.infra_attempts += 1
            if fresh.infra_attempts >= settings.JOB_MAX_INFRA_ATTEMPTS:
                _fail(fresh, _infra_gave_up(fresh))
                return True
        fresh.status = EvaluationJob.Status.QUEUED
        fresh.lease_owner = ""
        fresh.lease_expires_at = None
        fresh.run_started_at = None
        if not count_attempt:
            fresh.attempts = max(0, fresh.attempts - 1)
        fresh.save(update_fields=["status", "lease_owner", "lease_expires_at", "run_started_at", "attempts",
                                  "infra_attempts", "last_error"])
    return True


def expire_leases_of(worker_name: str) -> int:
    """A worker starting under a name that already holds leases is a restart of a dead one:
    make those leases claimable now instead of waiting for them to run out. The claim counts
    the killed run as an attempt if its sandbox had started (it may be the job that killed the
    worker), else as an infrastructure failure."""
    with transaction.atomic():
        return EvaluationJob.objects.filter(
            status=EvaluationJob.Status.LEASED, lease_owner=worker_name
        ).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
