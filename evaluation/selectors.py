"""Reads behind the Workers page: who is alive, what waits in the queues, what needs attention."""

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, F, IntegerField, Min, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from .models import Device, EvaluationJob, Worker

WORKER_SEEN_WITHIN = timedelta(minutes=2)
# The reason code a kernel's failure carries when its search's cancellation dropped its job (the kernel
# model's CANCELLED): such a job was never judged, so the queue does not count it as a failure.
CANCELLED = "cancelled"


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
THROUGHPUT_WINDOW = timedelta(minutes=10)  # long enough to smooth over slow compiles, short enough to be "now"


def worker_status(age: timedelta | None) -> str:
    """alive, stale or gone, from the time since the worker's last heartbeat (None: never beat)."""
    if age is None or age > WORKER_GONE_AFTER:
        return WORKER_GONE
    if age > WORKER_STALE_AFTER:
        return WORKER_STALE
    return WORKER_ALIVE


def worker_overview(*, now=None) -> dict:
    """The Workers page: every worker with its device, throughput and current jobs, one line per GPU
    model, the job queue of each device, and warnings for devices whose jobs wait with no worker to
    take them. Three queries, whatever the counts."""
    now = now or timezone.now()
    since = now - THROUGHPUT_WINDOW
    done_recently = (EvaluationJob.objects.filter(lease_owner=OuterRef("name"), status=EvaluationJob.Status.DONE,
                                                  finished_at__gte=since)
                     .order_by().values("lease_owner").annotate(n=Count("id")).values("n"))
    workers = list(Worker.objects.annotate(done_recently=Coalesce(Subquery(done_recently, output_field=IntegerField()), 0))
                   .order_by(F("heartbeat_at").desc(nulls_last=True), "name"))
    held = jobs_held(names=[worker.name for worker in workers], now=now)
    rows = [_worker_row(worker, now, held.get(worker.name, [])) for worker in workers]
    forgotten = WORKERS_FORGOTTEN_AFTER.total_seconds()
    listed = [row for row in rows if row["heartbeat_age"] is None or row["heartbeat_age"] <= forgotten]
    queues = job_queue_summary(now=now)
    return {"workers": listed, "forgotten": len(rows) - len(listed), "queues": queues,
            "gpu_models": gpu_model_summary(listed), "warnings": _worker_warnings(listed, queues),
            "shared_gpus": shared_gpus(listed),
            "throughput_window_minutes": THROUGHPUT_WINDOW.total_seconds() / 60,
            "heartbeat_seconds": Worker.HEARTBEAT_SECONDS, "stale_after": WORKER_STALE_AFTER.total_seconds(),
            "gone_after": WORKER_GONE_AFTER.total_seconds()}


def jobs_held(*, names: list[str], now) -> dict[str, list[EvaluationJob]]:
    """The jobs each worker holds a live lease on, oldest claim first: a pipelined worker may hold
    several. A lease past its expiry belongs to no one (another worker may claim the job)."""
    held: dict[str, list[EvaluationJob]] = {}
    jobs = (EvaluationJob.objects.filter(status=EvaluationJob.Status.LEASED, lease_owner__in=names,
                                         lease_expires_at__gte=now)
            .select_related("kernel__search__problem", "problem").order_by("started_at", "id"))
    for job in jobs:
        held.setdefault(job.lease_owner, []).append(job)
    return held


def device_summary(worker: Worker) -> dict:
    """What the page says of the device a worker serves, from the facts it recorded on start
    (runner.host.devicefacts); the name alone for a worker that recorded none."""
    facts = worker.device_facts or {}
    memory = facts.get("memory_bytes")
    return {"model": facts.get("name") or worker.device_name or "",
            "memory_gib": memory / 2 ** 30 if isinstance(memory, (int, float)) else None,
            "sm_count": facts.get("sm_count"), "compute_capability": facts.get("compute_capability"),
            "cores": facts.get("cores"), "error": facts.get("error") or ""}


def _throughput(worker: Worker, now) -> float:
    """Jobs finished per minute over the window, or over the worker's life when it is younger, so a
    worker started two minutes ago is not shown at a fifth of its pace."""
    window = THROUGHPUT_WINDOW
    if worker.started_at:
        window = min(window, max(now - worker.started_at, timedelta(minutes=1)))
    return worker.done_recently / (window.total_seconds() / 60)


def _worker_row(worker: Worker, now, jobs: list[EvaluationJob]) -> dict:
    # Clamped: heartbeats carry the worker host's clock, which may run a little ahead of ours.
    age = max(now - worker.heartbeat_at, timedelta(0)) if worker.heartbeat_at else None
    status = worker_status(age)
    return {"worker": worker, "status": status, "jobs": jobs, "job": jobs[0] if jobs else None,
            "device": device_summary(worker), "jobs_per_minute": _throughput(worker, now),
            "heartbeat_age": age.total_seconds() if age is not None else None}


def gpu_model_summary(rows: list[dict]) -> list[dict]:
    """One line per GPU model among the workers alive: how many GPUs serve it, their memory, and
    their jobs per minute together (the boards never mix models, so neither does this)."""
    models: dict[str, dict] = {}
    for row in rows:
        if row["worker"].device != "cuda" or row["status"] != WORKER_ALIVE:
            continue
        device = row["device"]
        line = models.setdefault(device["model"] or "unknown GPU", {
            "model": device["model"] or "unknown GPU", "gpus": 0, "memory_gib": device["memory_gib"],
            "jobs_per_minute": 0.0, "running": 0})
        line["gpus"] += 1
        line["jobs_per_minute"] += row["jobs_per_minute"]
        line["running"] += len(row["jobs"])
    return sorted(models.values(), key=lambda line: line["model"])


def job_queue_summary(*, now) -> list[dict]:
    """Per device: jobs queued and running (leased), failed in the last 24 h, and the age of the
    oldest queued job in seconds (None when none waits)."""
    queued, running, failed = (_job_state(state, now) for state in JOB_STATES)
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


JOB_STATES = ("queued", "running", "failed")
JOB_LIST_LIMIT = 200


def _job_state(state: str, now) -> Q:
    """The jobs each count of the queue summary counts. A failure is one of the last 24 h, not a
    job dropped by its search's cancellation (never judged, so no failure)."""
    if state == "queued":
        return Q(status=EvaluationJob.Status.QUEUED)
    if state == "running":
        return Q(status=EvaluationJob.Status.LEASED)
    return (Q(status=EvaluationJob.Status.FAILED, finished_at__gte=now - JOB_FAILURES_WINDOW)
            & ~Q(kernel__reason_code=CANCELLED))


def job_list(*, device: str, state: str, now=None) -> list[EvaluationJob]:
    """The jobs behind one count of the queue summary (queued ones in the order workers claim them,
    the others newest first)."""
    now = now or timezone.now()
    order = ("-priority", "id") if state == "queued" else ("-finished_at", "-started_at", "-id")
    return list(EvaluationJob.objects.filter(_job_state(state, now), device=device)
                .select_related("problem", "kernel", "kernel__search", "requested_by")
                .order_by(*order)[:JOB_LIST_LIMIT])


def shared_gpus(rows: list[dict]) -> list[dict]:
    """GPUs that more than one live worker serves (the same UUID in their facts): they time each
    other's kernels, so neither's times can be trusted. One evaluator per GPU."""
    by_gpu: dict[str, list[str]] = {}
    for row in rows:
        uuid = (row["worker"].device_facts or {}).get("uuid")
        if uuid and row["worker"].device == "cuda" and row["status"] == WORKER_ALIVE:
            by_gpu.setdefault(uuid, []).append(row["worker"].name)
    return [{"uuid": uuid, "model": next(r["device"]["model"] for r in rows if r["worker"].name == names[0]),
             "workers": sorted(names)} for uuid, names in sorted(by_gpu.items()) if len(names) > 1]


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
