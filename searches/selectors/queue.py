"""Reads on the evaluation queue: where a waiting job stands and about when it will run.

The estimate is plain arithmetic, said as such on the pages: the jobs ahead of it (claimed first:
higher priority, then older) plus those running now, times the median duration of the device's
recent jobs, shared among the evaluators of that device seen in the last two minutes."""

import math
from statistics import median

from django.db.models import Q
from django.utils import timezone

from evaluation.selectors import WORKER_SEEN_WITHIN
from searches.models import EvaluationJob, Kernel, Verdict, Worker

RECENT_JOBS = 50  # durations the median is taken over


def queue_recent_job_seconds(device: str) -> float | None:
    """The median duration of the device's last finished jobs (None before the first)."""
    rows = (EvaluationJob.objects.filter(device=device, status=EvaluationJob.Status.DONE, started_at__isnull=False,
                                         finished_at__isnull=False)
            .order_by("-finished_at").values_list("started_at", "finished_at")[:RECENT_JOBS])
    durations = [(end - start).total_seconds() for start, end in rows if end >= start]
    return median(durations) if durations else None


def queue_position(job: EvaluationJob, *, now=None) -> dict | None:
    """For a queued job: its place in its device's queue (1 = next), the jobs running now, the
    evaluators seen, the median job time and the estimated wait in seconds (None when there is
    no evaluator or no history to go by). None for a job that no longer waits."""
    if job.status != EvaluationJob.Status.QUEUED:
        return None
    now = now or timezone.now()
    same_device = EvaluationJob.objects.filter(device=job.device)
    ahead = same_device.filter(Q(priority__gt=job.priority) | Q(priority=job.priority, id__lt=job.id),
                               status=EvaluationJob.Status.QUEUED).count()
    running = same_device.filter(status=EvaluationJob.Status.LEASED).count()
    workers = Worker.objects.filter(device=job.device, heartbeat_at__gte=now - WORKER_SEEN_WITHIN).count()
    per_job = queue_recent_job_seconds(job.device)
    wait = None
    if workers and ahead + running < workers:
        wait = 0.0  # an evaluator is free
    elif workers and per_job is not None:
        # Whole batches: the job starts when one evaluator frees up after the ones ahead.
        wait = math.ceil((ahead + running) / workers) * per_job
    return {"position": ahead + 1, "queued_ahead": ahead, "running": running, "workers": workers,
            "job_seconds": per_job, "wait_seconds": wait, "device": job.device}


def queue_for_kernels(kernel_ids, *, now=None) -> dict | None:
    """The queued job of these kernels that runs first, with its `queue_position` and how many
    of them wait (None when none does)."""
    waiting = EvaluationJob.objects.filter(kernel_id__in=kernel_ids, status=EvaluationJob.Status.QUEUED)
    first = waiting.order_by("-priority", "id").first()
    if first is None:
        return None
    return {**queue_position(first, now=now), "waiting": waiting.count()}


def queue_wait_text(place: dict | None) -> str:
    """One sentence for a page: position, and the estimate or why there is none."""
    if not place:
        return ""
    where = f"Position {place['position']} in the {place['device']} evaluation queue"
    where += f" ({place['running']} running now)" if place["running"] else ""
    if not place["workers"]:
        return where + f": no {place['device']} evaluator has reported in the last two minutes, so no estimate."
    if place["wait_seconds"] is None:
        return where + ": no finished job yet to estimate from."
    if place["wait_seconds"] == 0:
        return where + ": an idle evaluator takes it within seconds."
    return (where + f": starts in about {_duration(place['wait_seconds'])} "
            f"({place['workers']} evaluator{'s' if place['workers'] != 1 else ''}, "
            f"recent jobs take {_duration(place['job_seconds'])} each).")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def kernel_progress(kernel: Kernel, *, now=None) -> dict:
    """Where a kernel's verdict stands, for its page's poll (static/js/kernel_live.js): settled, or its
    place in the queue, or how long its evaluation has run."""
    settled = kernel.status not in (Verdict.PENDING, Verdict.EVALUATING)
    if settled:
        return {"settled": True, "text": ""}
    now = now or timezone.now()
    running = (EvaluationJob.objects.filter(kernel=kernel, status=EvaluationJob.Status.LEASED)
               .exclude(run_started_at=None).order_by("-run_started_at").first())
    if running:
        elapsed = (now - running.run_started_at).total_seconds()
        return {"settled": False, "text": f"Evaluating for {_duration(elapsed)} (compile, check, time)."}
    text = queue_wait_text(queue_for_kernels([kernel.id], now=now))
    return {"settled": False, "text": text or "Waiting for an evaluator."}
