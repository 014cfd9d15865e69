"""Kernels and their verdicts, and share links to kernels, searches and suites."""

import uuid

from django.conf import settings
from django.db import models

from .problems import Problem, Suite
from .searches import Idea, ProposerCall, Search


class Verdict(models.TextChoices):
    """The runner's verdicts (runner contract), plus our own states around them."""

    PENDING = "pending", "Waiting"
    EVALUATING = "evaluating", "Evaluating"
    CORRECT = "correct", "Correct"
    INCORRECT = "incorrect", "Incorrect"
    REJECTED = "rejected", "Rejected"
    COMPILE_ERROR = "compile_error", "Compile error"
    RUNTIME_ERROR = "runtime_error", "Runtime error"
    TIMEOUT = "timeout", "Timed out"
    CRASHED = "crashed", "Crashed"
    OOM = "oom", "Out of memory"
    NO_CODE = "no_code", "No code in reply"
    FAILED = "failed", "Evaluation failed"  # the job killed its worker too often


def ranked_q(prefix: str = "") -> models.Q:
    """Kernels that rank: correct with a time, and either plausible or reproduced by a verified rerun and
    approved by a person. `prefix` reaches them through a relation (e.g. "kernels__")."""
    return (models.Q(**{f"{prefix}status": Verdict.CORRECT, f"{prefix}median_ms__isnull": False})
            & (models.Q(**{f"{prefix}quarantined": False})
               | models.Q(**{f"{prefix}verified": True, f"{prefix}approved_by__isnull": False})))


class KernelQuerySet(models.QuerySet):
    def ranked(self):
        return self.filter(ranked_q())


class Kernel(models.Model):
    """A candidate `ModelNew` module: a node of the search tree."""

    objects = KernelQuerySet.as_manager()

    class Origin(models.TextChoices):
        SEED = "seed", "Starting kernel"
        LLM = "llm", "LLM"
        PLAYBOOK = "playbook", "Playbook"
        USER = "user", "User"
        REPAIR = "repair", "Repair"
        FORK = "fork", "Forked"

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="kernels")
    search = models.ForeignKey(Search, null=True, blank=True, on_delete=models.CASCADE, related_name="kernels")
    idea = models.ForeignKey(Idea, null=True, blank=True, on_delete=models.SET_NULL, related_name="kernels")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    repair_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="repairs")
    round = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=200, blank=True)
    source = models.TextField(blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.LLM)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    call = models.ForeignKey(ProposerCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="kernels")
    # Which of the idea's K implementations this is; null for seed, user, repair and fork kernels.
    variant = models.PositiveSmallIntegerField(null=True, blank=True)
    # The source as judged (engine/dedup.py): a source judged before in the search takes that verdict, unrun.
    source_hash = models.CharField(max_length=64, blank=True, db_index=True)
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="duplicates")
    analysis = models.JSONField(default=dict, blank=True)  # the model's own: bottleneck, plan, expected_speedup

    # Denormalised from the kernel's search run, for the tree and leaderboards.
    status = models.CharField(max_length=16, choices=Verdict.choices, default=Verdict.PENDING, db_index=True)
    reason = models.TextField(blank=True)
    # Why it was turned away (runner/common/findings.py); partial_replacement, no_kernel_of_its_own: legal, never cheats.
    reason_code = models.CharField(max_length=32, blank=True)
    quarantined = models.BooleanField(default=False)
    median_ms = models.FloatField(null=True, blank=True)
    speedup_vs_eager = models.FloatField(null=True, blank=True)
    speedup_vs_compile = models.FloatField(null=True, blank=True)
    precision = models.CharField(max_length=32, blank=True)
    device_name = models.CharField(max_length=200, blank=True, db_index=True)
    verified = models.BooleanField(default=False)  # a fresh rerun reproduced its speedup (kernel services)
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="approved_kernels")
    approved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["problem", "status", "median_ms"])]
        # The engine's idempotency keys: re-running a step never duplicates a candidate.
        constraints = [
            models.UniqueConstraint(fields=["idea", "variant"], condition=models.Q(variant__isnull=False),
                                    name="unique_kernel_variant"),
            models.UniqueConstraint(fields=["repair_of"], condition=models.Q(repair_of__isnull=False),
                                    name="unique_kernel_repair"),
            models.UniqueConstraint(fields=["search"], condition=models.Q(origin="seed"),
                                    name="unique_search_seed_kernel"),
        ]

    # The verdict a kernel carries for the tree and the rankings (a fork's copy and a duplicate take it whole).
    VERDICT_FIELDS = ("status", "reason", "reason_code", "quarantined", "median_ms", "speedup_vs_eager",
                      "speedup_vs_compile", "precision", "device_name", "verified", "evaluated_at")

    # The columns a kernel mirrors from its primary run: BenchmarkRun's of the same names, copied by take_figures
    # only. Of them, TIMING_FIGURES are what a quiet rerun replaces (services/kernels.py).
    RUN_FIGURES = ("status", "reason", "quarantined", "median_ms", "speedup_vs_eager", "speedup_vs_compile",
                   "precision", "device_name")
    TIMING_FIGURES = ("median_ms", "speedup_vs_eager", "speedup_vs_compile")

    # A queued kernel its search's cancellation dropped: FAILED with this code, shown grey, never a failure.
    CANCELLED, CANCELLED_LABEL = "cancelled", "Not evaluated (cancelled)"

    def __str__(self):
        return self.name or f"kernel {str(self.code)[:8]}"

    @staticmethod
    def shown(status: str, reason_code: str) -> str:
        return Kernel.CANCELLED if status == Verdict.FAILED and reason_code == Kernel.CANCELLED else status

    def take_figures(self, run, names: tuple[str, ...] = RUN_FIGURES) -> list[str]:
        """Copy `names` (all of RUN_FIGURES unless told) from `run`, a BenchmarkRun; the names, for save's
        update_fields."""
        for name in names:
            setattr(self, name, getattr(run, name))
        return list(names)

    def verdict(self) -> dict:
        return {name: getattr(self, name) for name in self.VERDICT_FIELDS}


class ShareLink(models.Model):
    """A read-only link for people without a login. Only the token's SHA-256 is stored."""

    class Kind(models.TextChoices):
        LEADERBOARD = "leaderboard", "Leaderboard"
        SEARCH = "search", "Search"
        KERNEL = "kernel", "Kernel"
        COMPARE = "compare", "Comparison"
        SUITE = "suite", "Suite"

    token_hash = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    label = models.CharField(max_length=200, blank=True)
    problem = models.ForeignKey(Problem, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    search = models.ForeignKey(Search, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    kernel = models.ForeignKey(Kernel, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    other_kernel = models.ForeignKey(Kernel, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    suite = models.ForeignKey(Suite, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    device_name = models.CharField(max_length=200, blank=True)  # leaderboard filter, if any
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
