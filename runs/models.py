"""A run: one search configuration applied to a suite, owning the kernels it produced. Scores are
computed per run (runs/selectors.py), never from a problem's best kernel ever judged.

A run holds its kernels by (suite problem, sample): a re-judged KernelBench run keeps each file's
sample id; a search run gives each problem's search one sample and all its kernels.
"""

import uuid

from django.conf import settings
from django.db import models


class Rule(models.TextChoices):
    KERNELLAB = "kernellab", "KernelLab"
    KERNELBENCH = "kernelbench", "KernelBench v0.1 (allclose, atol = rtol = 1e-2)"
    KERNELBENCH_MAIN = "kernelbench-main", "KernelBench main (allclose, 1e-4 for fp32)"




class Run(models.Model):
    class Source(models.TextChoices):
        REJUDGE = "rejudge", "Re-judged files"
        SEARCH = "search", "Searches"
        MIGRATED = "migrated", "Migrated sweep"

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=200)
    suite = models.ForeignKey("searches.Suite", on_delete=models.CASCADE, related_name="runs")
    source = models.CharField(max_length=16, choices=Source.choices)
    # The configuration, as one search (or one generation run) states it.
    proposer = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=100, blank=True)
    samples = models.PositiveSmallIntegerField(default=1)  # independent samples per problem
    shape = models.JSONField(default=dict, blank=True)  # rounds/parents/ideas/kernels, budgets
    language = models.CharField(max_length=16, blank=True)
    allow_library = models.BooleanField(default=False)
    # The correctness rule its kernels are judged by (runner/common/rules.py): KernelLab's, or KernelBench's,
    # whose verdicts runs/kernelbench_mode.py reads as they are; KernelLab's scores then have no kernel.
    rule = models.CharField(max_length=24, choices=Rule.choices, default=Rule.KERNELLAB)
    # Baselines its kernels are timed against beside eager and torch.compile's default (any of
    # searches.config.MORE_BASELINES, as the runner names them; CUDA-only ones are skipped on the CPU, with the reason).
    baselines = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["suite", "name"], name="run_name_unique_per_suite")]

    def __str__(self):
        return f"{self.name} on {self.suite_id}"


class RunKernel(models.Model):
    """One kernel of a run, as sample `sample` of one suite problem."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="entries")
    member = models.ForeignKey("searches.SuiteProblem", on_delete=models.CASCADE, related_name="run_entries")
    kernel = models.ForeignKey("searches.Kernel", on_delete=models.CASCADE, related_name="run_entries")
    sample = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["member_id", "sample", "kernel_id"]
        constraints = [models.UniqueConstraint(fields=["run", "kernel"], name="run_kernel_once")]
        indexes = [models.Index(fields=["run", "member", "sample"])]


class RunSearch(models.Model):
    """A search of a run: every kernel it judges is sample `sample` of its problem."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="run_searches")
    member = models.ForeignKey("searches.SuiteProblem", on_delete=models.CASCADE, related_name="run_searches")
    search = models.ForeignKey("searches.Search", on_delete=models.CASCADE, related_name="run_entries")
    sample = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "search"], name="run_search_once")]


class PublishedBaseline(models.Model):
    """A baseline time someone else published for a problem (KernelBench's results/timing files), matched
    to the problem by its source's sha256, never by file name. Measured on `gpu`, not on this host's:
    pages name the GPU and the publisher beside every such number."""

    problem = models.ForeignKey("searches.Problem", on_delete=models.CASCADE, related_name="published_baselines")
    publisher = models.CharField(max_length=100)  # e.g. "KernelBench H100_Modal"
    config = models.CharField(max_length=100)  # "eager", "torch.compile inductor default", ...
    gpu = models.CharField(max_length=200)  # the file's own "hardware"
    file = models.CharField(max_length=300)  # the problem's file in the publisher's layout, for reference only
    mean_ms = models.FloatField()
    std_ms = models.FloatField(null=True, blank=True)
    trials = models.PositiveIntegerField(null=True, blank=True)
    loaded_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["publisher", "config"]
        constraints = [models.UniqueConstraint(fields=["problem", "publisher", "config"],
                                               name="published_baseline_once")]

    def __str__(self):
        return f"{self.publisher} {self.config} on {self.gpu}: {self.mean_ms} ms"
