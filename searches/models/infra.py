"""The evaluation queue, its benchmark runs and workers (the search and problem event logs are `live`'s)."""

from django.conf import settings
from django.db import models

from .kernels import Kernel, Verdict
from .problems import Device, Problem
from .searches import Search


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

    class Purpose(models.TextChoices):
        VALIDATE = "validate", "Problem validation"
        SEARCH = "search", "Search candidate"
        RERUN = "rerun", "Verified rerun"
        MANUAL = "manual", "Manual submission"
        TOOL = "tool", "Agent tool run"  # compile, check or profile a draft: advisory, never a verdict

    problem = models.ForeignKey(Problem, on_delete=models.CASCADE, related_name="jobs")
    kernel = models.ForeignKey(Kernel, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs")
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
    search = models.ForeignKey(Search, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    result = models.JSONField(null=True, blank=True)
    # Who asked for it (their cap, searches/services/scheduling.py); null for the engine's and the system's.
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
        ordering = ["-priority", "id"]


class BenchmarkRun(models.Model):
    """One verdict from the runner, with the hardware and software it ran on."""

    kernel = models.ForeignKey(Kernel, on_delete=models.CASCADE, related_name="runs")
    job = models.OneToOneField(EvaluationJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="run")
    purpose = models.CharField(max_length=16, choices=EvaluationJob.Purpose.choices, default="search")
    status = models.CharField(max_length=16, choices=Verdict.choices)
    reason = models.TextField(blank=True)
    quarantined = models.BooleanField(default=False)
    quarantine_reason = models.TextField(blank=True)
    noisy_reason = models.TextField(blank=True)  # what disturbed the device while it was timed (runner/host/gpustate.py)
    seed = models.BigIntegerField(null=True, blank=True)
    precision = models.CharField(max_length=32, blank=True)
    compile_seconds = models.FloatField(null=True, blank=True)
    compile_log = models.TextField(blank=True)
    correctness = models.JSONField(null=True, blank=True)
    timing = models.JSONField(null=True, blank=True)
    baseline = models.JSONField(null=True, blank=True)
    environment = models.JSONField(null=True, blank=True)
    median_ms = models.FloatField(null=True, blank=True)
    speedup_vs_eager = models.FloatField(null=True, blank=True)
    speedup_vs_compile = models.FloatField(null=True, blank=True)
    device_name = models.CharField(max_length=200, blank=True, db_index=True)
    worker = models.CharField(max_length=200, blank=True)
    result = models.JSONField(null=True, blank=True)  # the runner's dict, whole
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]


class Worker(models.Model):
    """An evaluation worker process (one per GPU), seen through its heartbeats."""

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
