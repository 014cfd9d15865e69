"""KernelLab's data: problems, searches and their tree of ideas and kernels, runs, events, links. Anything
shown outside the database (URLs, share links) uses the UUID `code`, never the primary key."""

import uuid

from django.conf import settings
from django.db import models


class Device(models.TextChoices):
    CPU = "cpu", "CPU"
    CUDA = "cuda", "CUDA GPU"


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
        """Why a trivial output passes this problem's judging (runner/degenerate.py), or ""."""
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


class Search(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        CANCELLED = "cancelled", "Cancelled"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    FINISHED = (Status.CANCELLED, Status.COMPLETED, Status.FAILED)
    STEP_MODELS = {"ideas": "ideas_model", "kernel": "kernel_model", "repair": "repair_model"}  # ProposerCall.Purpose

    class Proposer(models.TextChoices):
        PLAYBOOK = "playbook", "Built-in hand-written kernels (no AI)"
        ANTHROPIC = "anthropic", "Anthropic (LLM)"

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    problem = models.ForeignKey(Problem, on_delete=models.PROTECT, related_name="searches")
    name = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    proposer = models.CharField(max_length=16, choices=Proposer.choices, default=Proposer.PLAYBOOK)
    model = models.CharField(max_length=100, blank=True)  # LLM model name, when the proposer has one
    # A model per step (e.g. a strong one for ideas, a cheaper one for repairs); empty: `model`.
    ideas_model, kernel_model, repair_model = (models.CharField(max_length=100, blank=True) for _ in range(3))
    effort = models.CharField(max_length=16, blank=True)  # LLM effort label (output_config.effort)
    # Extended thinking before each reply, in tokens (0: off; the API's least is 1024).
    thinking_tokens = models.PositiveIntegerField(default=0)
    device = models.CharField(max_length=8, choices=Device.choices, default=Device.CPU)

    # The method's knobs: R rounds, B parents, I ideas per parent, K kernels per idea.
    rounds = models.PositiveSmallIntegerField(default=5)
    parents_per_round = models.PositiveSmallIntegerField(default=2)
    ideas_per_parent = models.PositiveSmallIntegerField(default=3)
    kernels_per_idea = models.PositiveSmallIntegerField(default=2)
    bank_size = models.PositiveSmallIntegerField(default=2)
    repair_attempts = models.PositiveSmallIntegerField(default=1)
    # How many of a round's fastest correct kernels carry their profile (runner/roofline.py) into
    # the next ideas calls; 0: none.
    profiled_kernels = models.PositiveSmallIntegerField(default=2)
    allow_library = models.BooleanField(default=False)
    # The kernel language asked for (proposers.prompts.LANGUAGES); "" for the device's default.
    language = models.CharField(max_length=16, blank=True)
    # Stop once this many rounds in a row found nothing faster (0: run all rounds).
    stale_rounds = models.PositiveSmallIntegerField(default=0)
    # A branch whose kernel reaches this % of its speed of light gets no more ideas (0: never stop).
    sol_stop_percent = models.PositiveSmallIntegerField(default=0)
    # Budgets: the search stops cleanly when one is reached. Null means no limit.
    max_candidates = models.PositiveIntegerField(null=True, blank=True)
    max_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    max_cost_usd = models.FloatField(null=True, blank=True)

    current_round = models.PositiveSmallIntegerField(default=0)
    candidates_evaluated = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    stop_reason = models.TextField(blank=True)  # why it ended: rounds done, budget, cancelled, error

    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    forked_from_kernel = models.ForeignKey(
        "Kernel", null=True, blank=True, on_delete=models.SET_NULL, related_name="forked_searches"
    )
    last_event_seq = models.PositiveBigIntegerField(default=0)
    # Engine bookkeeping (searches/engine/loop.py): the parents chosen when each round started
    # ({"1": [kernel ids], ...}), and a lease so only one orchestrator advances a search at a time.
    round_parents = models.JSONField(default=dict, blank=True)
    engine_lease_owner = models.CharField(max_length=64, blank=True)
    engine_lease_until = models.DateTimeField(null=True, blank=True)
    engine_kicked = models.BooleanField(default=False)  # work arrived while the lease was held
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "searches"

    def step_model(self, step: str) -> str:  # "ideas", "kernel" or "repair": its own model, else the search's
        return getattr(self, self.STEP_MODELS[step]) or self.model

    def __str__(self):
        return self.name or f"Search {str(self.code)[:8]} on {self.problem}"


class ProposerCall(models.Model):
    """One request to a proposer (an LLM call, or a playbook lookup): prompt, reply, tokens, cost."""

    class Purpose(models.TextChoices):
        IDEAS = "ideas", "Ideas"
        KERNEL = "kernel", "Kernel"
        REPAIR = "repair", "Repair"

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="proposer_calls")
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    proposer = models.CharField(max_length=16)
    model = models.CharField(max_length=100, blank=True)
    prompt = models.TextField(blank=True)
    reply = models.TextField(blank=True)
    ok = models.BooleanField(default=True)
    error = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    duration_s = models.FloatField(default=0.0)
    no_tool_replies = models.PositiveSmallIntegerField(default=0)  # replies calling no tool under tool_choice auto
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]


class Idea(models.Model):
    """A natural-language optimization idea for a parent kernel: an edge of the search tree."""

    class Origin(models.TextChoices):
        LLM = "llm", "LLM"
        PLAYBOOK = "playbook", "Playbook"
        USER = "user", "User"

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="ideas")
    parent_kernel = models.ForeignKey(
        "Kernel", null=True, blank=True, on_delete=models.SET_NULL, related_name="child_ideas"
    )
    round = models.PositiveSmallIntegerField(default=0)
    title = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.LLM)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    call = models.ForeignKey(ProposerCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="ideas")
    # Position in the proposer's reply for (round, parent); null for user ideas and fork copies.
    slot = models.PositiveSmallIntegerField(null=True, blank=True)
    # The proposer's distinct implementation briefs, one per kernel variant (each call sees its own).
    briefs = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["search", "round", "parent_kernel", "slot"], condition=models.Q(slot__isnull=False),
                name="unique_idea_slot",
            )
        ]

    def __str__(self):
        return self.title


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


class Kernel(models.Model):
    """A candidate `ModelNew` module: a node of the search tree."""

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
    # Why it was turned away (runner/findings.py); partial_replacement, no_kernel_of_its_own: legal, never cheats.
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

    # A queued kernel its search's cancellation dropped: FAILED with this code, shown grey, never a failure.
    CANCELLED, CANCELLED_LABEL = "cancelled", "Not evaluated (cancelled)"

    def __str__(self):
        return self.name or f"kernel {str(self.code)[:8]}"

    @staticmethod
    def shown(status: str, reason_code: str) -> str:
        return Kernel.CANCELLED if status == Verdict.FAILED and reason_code == Kernel.CANCELLED else status

    def verdict(self) -> dict:
        return {name: getattr(self, name) for name in self.VERDICT_FIELDS}


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
    noisy_reason = models.TextField(blank=True)  # what disturbed the device while it was timed (runner/gpustate.py)
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


class ApiKeyState(models.Model):
    """One API key's shared admission (searches/engine/gate.py): who holds its in-flight places and
    until when the API asked its callers to wait. The key is known only by a keyed hash."""

    key = models.CharField(max_length=64)
    slot = models.PositiveSmallIntegerField()
    holder = models.CharField(max_length=64, blank=True, default="")
    held_until = models.DateTimeField(null=True, blank=True)
    paused_until = models.DateTimeField(null=True, blank=True)  # kept on slot 0

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "slot"], name="api_key_slot_unique")]


class SearchEvent(models.Model):
    """Append-only log of what happened in a search. `seq` is assigned under a lock on the
    search row in the writing transaction, so it follows commit order."""

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["search", "seq"]
        constraints = [models.UniqueConstraint(fields=["search", "seq"], name="unique_event_seq")]


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
