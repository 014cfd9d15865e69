"""Problems and suites: the reference programs kernels are judged against."""

import uuid

from django.conf import settings
from django.db import models

from evaluation.models import Device


class Problem(models.Model):
    """A PyTorch reference program in KernelBench format. Never edited once it has results:
    an edit makes a new version sharing the same `lineage`."""

    class Validation(models.TextChoices):
        PENDING = "pending", "Waiting for validation"
        RUNNING = "running", "Validating"
        OK = "ok", "Valid"
        INVALID = "invalid", "Invalid"
        ERROR = "error", "Validation failed to run"

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    lineage = models.UUIDField(default=uuid.uuid4, db_index=True, editable=False)
    version = models.PositiveIntegerField(default=1)
    previous_version = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="next_versions"
    )
    is_latest = models.BooleanField(default=True, db_index=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source = models.TextField()
    # None means "the dtype's default" (fp32 1e-4, fp16/bf16 1e-2), decided by the runner.
    atol = models.FloatField(null=True, blank=True)
    rtol = models.FloatField(null=True, blank=True)
    device = models.CharField(max_length=8, choices=Device.choices, default=Device.CPU)
    catalog_key = models.CharField(max_length=100, blank=True, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    validation_status = models.CharField(max_length=16, choices=Validation.choices, default=Validation.PENDING)
    validation_reason = models.TextField(blank=True)
    validation = models.JSONField(null=True, blank=True)  # the runner's `validate` dict, whole
    validated_at = models.DateTimeField(null=True, blank=True)
    family = models.CharField(max_length=50, blank=True)
    flops = models.FloatField(null=True, blank=True)
    min_bytes = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["lineage", "version"], name="unique_problem_version")]

    def __str__(self):
        return f"{self.name} v{self.version}"

    @property
    def baseline(self):
        return (self.validation or {}).get("baseline") or {}

    @property
    def degenerate(self) -> str:
        """Why a trivial output passes this problem's judging (runner/inside/degenerate.py), or ""."""
        if self.validation_status != self.Validation.OK:
            return ""
        return (self.validation or {}).get("degenerate") or ""


class Suite(models.Model):
    """A named collection of problems, e.g. "KernelBench level 1", scored together (fast_p)."""

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    problems = models.ManyToManyField(Problem, through="SuiteProblem", related_name="suites")

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class SuiteProblem(models.Model):
    """A problem's place in a suite, with its KernelBench level and number when it has them."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="members")
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="suite_memberships")
    level = models.PositiveSmallIntegerField(null=True, blank=True)
    number = models.PositiveIntegerField(null=True, blank=True)
    file_name = models.CharField(max_length=300, blank=True)  # as imported, e.g. level1/1_Square_....py

    class Meta:
        ordering = ["level", "number", "id"]
        constraints = [models.UniqueConstraint(fields=["suite", "problem"], name="unique_suite_problem")]
