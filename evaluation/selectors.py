"""Reads behind the Workers page: who is alive, what waits in the queues, what needs attention."""

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, F, Min, Q
from django.utils import timezone

from searches.models import Device, EvaluationJob, Worker

WORKER_SEEN_WITHIN = timedelta(minutes=2)


def evaluator_seen(device: str) -> bool:
    since = timezone.now() - WORKER_SEEN_WITHIN
    return Worker.objects.filter(device=device, heartbeat_at__gte=since).exists()


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
