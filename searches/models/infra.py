"""Benchmark runs: the verdicts of evaluation jobs (the jobs are `evaluation`'s, the event logs `live`'s)."""

from django.db import models

from evaluation.models import EvaluationJob

from .kernels import Kernel, Verdict


class BenchmarkRun(models.Model):
    """One verdict from the runner, with the hardware and software it ran on."""

    kernel = models.ForeignKey(Kernel, on_delete=models.CASCADE, related_name="runs")
    job = models.OneToOneField("evaluation.EvaluationJob", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="run")
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


