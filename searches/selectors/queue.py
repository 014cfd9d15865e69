"""Reads on the evaluation queue: where a waiting job stands and about when it will run, and where a
running one stands (its phase) and about when it will end.

The estimate is plain arithmetic, said as such on the pages: the jobs ahead of it (claimed first:
higher priority, then older) plus those running now, times the median duration of the device's
recent jobs, shared among the evaluators of that device seen in the last two minutes."""

import math
from statistics import median

from django.db.models import Q
from django.utils import timezone

from evaluation.models import EvaluationJob, Worker
from evaluation.selectors import WORKER_SEEN_WITHIN
from searches.models import Kernel, Verdict

RECENT_JOBS = 50  # durations the median is taken over

# A run's phases in the order they come (runner/phases.py; "starting" is the evaluator's: until a warm
# sandbox has the job), and what a page calls them.
PHASE_ORDER = {
    "evaluate": ["starting", "compiling", "waiting_for_device", "checking", "timing", "judging"],
    "validate": ["starting", "running_reference", "waiting_for_device", "timing"],
}
PHASE_LABELS = {
    "starting": "Starting a sandbox", "compiling": "Compiling", "running_reference": "Running the reference",
    "waiting_for_device": "Waiting for the device", "checking": "Checking correctness", "timing": "Timing",
    "judging": "Judging the outputs",
}


def queue_recent_job_seconds(device: str) -> float | None:
    """The median duration of the device's last finished jobs (None before the first)."""
    rows = (EvaluationJob.objects.filter(device=device, status=EvaluationJob.Status.DONE, started_at__isnull=False,
                                         finished_at__isnull=False)
            .order_by("-finished_at").values_list("started_at", "finished_at")[:RECENT_JOBS])
    durations = [(end - start).total_seconds() for start, end in rows if end >= start]
    return median(durations) if durations else None


def _kind(job: EvaluationJob) -> str:
    return "validate" if job.purpose == EvaluationJob.Purpose.VALIDATE else "evaluate"


def queue_phase_seconds(device: str, kind: str) -> dict[str, float]:
    """Per phase, the median seconds it took in the device's last finished runs of this kind
    ("evaluate" or "validate"), as their evaluators timed them; {} before the first."""
    jobs = EvaluationJob.objects.filter(device=device, status=EvaluationJob.Status.DONE).exclude(phase_seconds={})
    jobs = jobs.filter(purpose=EvaluationJob.Purpose.VALIDATE) if kind == "validate" else jobs.exclude(
        purpose=EvaluationJob.Purpose.VALIDATE)
    taken: dict[str, list[float]] = {}
    for seconds in jobs.order_by("-finished_at").values_list("phase_seconds", flat=True)[:RECENT_JOBS]:
        for phase in PHASE_ORDER[kind]:  # a phase a run skipped took it no time
            value = (seconds or {}).get(phase, 0.0)
            taken.setdefault(phase, []).append(value if isinstance(value, (int, float)) else 0.0)
    return {phase: median(values) for phase, values in taken.items()}


def job_progress(job: EvaluationJob, *, now=None) -> dict:
    """A running job: its phase, seconds in it and since its run began, and the seconds left by the
    medians of recent runs' phases (None without history), with one sentence saying all that."""
    now = now or timezone.now()
    kind, phase = _kind(job), job.phase or "starting"
    began = job.run_started_at or job.started_at or now
    elapsed = max(0.0, (now - began).total_seconds())
    in_phase = max(0.0, (now - job.phase_started_at).total_seconds()) if job.phase_started_at else elapsed
    medians = queue_phase_seconds(job.device, kind)
    order = PHASE_ORDER[kind]
    left = None
    if medians and phase in order:
        later = order[order.index(phase) + 1:]
        left = max(0.0, medians.get(phase, 0.0) - in_phase) + sum(medians.get(p, 0.0) for p in later)
    label = PHASE_LABELS.get(phase, phase.replace("_", " ").capitalize())
    text = f"{label} for {_duration(in_phase)}; {_duration(elapsed)} since the run began"
    if left is None:
        text += ". No finished run with phase times yet to estimate the rest from."
    elif left < 1:
        text += ": longer than recent runs' median, which would have finished by now."
    else:
        text += (f": about {_duration(left)} left (median phase times of the last {job.device} "
                 f"{'validations' if kind == 'validate' else 'evaluations'}).")
    return {"phase": phase, "label": label, "phase_s": in_phase, "elapsed_s": elapsed, "left_s": left,
            "text": text}


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
    """The queued job of these kernels that runs first, with its `queue_position`, how many of them
    wait and how many of those are verified reruns (None when none does)."""
    waiting = EvaluationJob.objects.filter(kernel_id__in=kernel_ids, status=EvaluationJob.Status.QUEUED)
    first = waiting.order_by("-priority", "id").first()
    if first is None:
        return None
    reruns = waiting.filter(purpose=EvaluationJob.Purpose.RERUN).count()
    return {**queue_position(first, now=now), "waiting": waiting.count(), "reruns": reruns}


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
        return {"settled": False, **job_progress(running, now=now)}
    place = queue_for_kernels([kernel.id], now=now)
    text = queue_wait_text(place)
    if place:
        text += run_estimate_text(place["device"], "evaluate")
    return {"settled": False, "text": text or "Waiting for an evaluator."}


def run_estimate_text(device: str, kind: str) -> str:
    """How long a run of this kind takes once it starts, by the medians of recent runs' phases ("" without any)."""
    medians = queue_phase_seconds(device, kind)
    if not medians:
        return ""
    what = "validations" if kind == "validate" else "evaluations"
    return (f" Its run then takes about {_duration(sum(medians.values()))} "
            f"(median phase times of the last {device} {what}).")
