"""The evaluation queue's rows: its jobs and the evaluators that claim them, and the devices they serve.
They kept the tables they had when they were `searches` models (`db_table`); they point at that app's
problems, kernels and searches by name, never importing it."""

from django.conf import settings
from django.db import models

__all__ = ["Device", "EvaluationJob", "Worker"]


class Device(models.TextChoices):
    CPU = "cpu", "CPU"
    CUDA = "cuda", "CUDA GPU"


class EvaluationJob(models.Model):
    """One piece of sandboxed work (validate a problem, or evaluate a kernel), claimed
    atomically by an evaluation worker of the right device under a lease.

    `attempts` counts claims whose run began (`run_started_at`: the sandbox was given the job), so a
    candidate that kills its worker spends its attempts; a holder that died before that spends an
    `infra_attempts` instead (evaluation/leases.py)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        LEASED = "leased", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    UNFINISHED = (Status.QUEUED, Status.LEASED)  # waiting or running

    class Purpose(models.TextChoices):
        VALIDATE = "validate", "Problem validation"
        SEARCH = "search", "Search candidate"
        RERUN = "rerun", "Verified rerun"
        MANUAL = "manual", "Manual submission"
        TOOL = "tool", "Agent tool run"  # compile, check or profile a draft: advisory, never a verdict

    problem = models.ForeignKey("searches.Problem", on_delete=models.CASCADE, related_name="jobs")
    kernel = models.ForeignKey("searches.Kernel", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="jobs")
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.SEARCH)
    device = models.CharField(max_length=8, choices=Device.choices, default=Device.CPU)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    priority = models.IntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=3)
    infra_attempts = models.PositiveSmallIntegerField(default=0)
    seed = models.BigIntegerField(null=True, blank=True)
    options = models.JSONField(default=dict, blank=True)  # extra runner arguments, e.g. allow_library
    # A tool run's search (it has no kernel yet: the draft's source is in `options`) and the runner's answer.
    search = models.ForeignKey("searches.Search", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    result = models.JSONField(null=True, blank=True)
    # Who asked for it (their cap, evaluation/scheduling.py); null for the engine's and the system's.
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    run_started_at = models.DateTimeField(null=True, blank=True)  # by its current holder; cleared at each claim
    finished_at = models.DateTimeField(null=True, blank=True)
    # Where the run stands (runner/phases.py, as the evaluator heard it) and, per phase passed, its
    # seconds on the evaluator's clock: shown while it runs, and the ETAs' measured history.
    phase = models.CharField(max_length=32, blank=True)
    phase_started_at = models.DateTimeField(null=True, blank=True)
    phase_seconds = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "searches_evaluationjob"
        ordering = ["-priority", "id"]


class Worker(models.Model):
    """An evaluation worker process (one per GPU, or one for the CPU), seen through its heartbeats."""

    # between jobs from its main loop, during one from the job's lease renewer
    HEARTBEAT_SECONDS = settings.WORKER_HEARTBEAT_SECONDS

    name = models.CharField(max_length=200, unique=True)
    host = models.CharField(max_length=200, blank=True)
    pid = models.PositiveIntegerField(null=True, blank=True)
    device = models.CharField(max_length=8, choices=Device.choices, default=Device.CPU)
    device_name = models.CharField(max_length=200, blank=True)
    # Its device (model, memory, SMs, caches, clocks, ceilings) as the runner read it: shown, told the model.
    device_facts = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    current_job = models.ForeignKey(EvaluationJob, null=True, blank=True, on_delete=models.SET_NULL)
    jobs_done = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "searches_worker"
