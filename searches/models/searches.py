"""Searches, the proposer calls they make and the ideas those calls return."""

import uuid

from django.conf import settings
from django.db import models

from proposers.capabilities import Capabilities
from proposers.registry import capabilities as proposer_capabilities
from searches.config import SEARCH_CONFIG as CONFIG

from .problems import Device, Problem


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
    name = models.CharField(max_length=CONFIG.name.max_length, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    proposer = models.CharField(max_length=16, choices=Proposer.choices, default=CONFIG.proposer.default)
    model = models.CharField(max_length=CONFIG.model.max_length, blank=True)  # LLM model name, when the proposer has one
    # A model per step (e.g. a strong one for ideas, a cheaper one for repairs); empty: `model`.
    ideas_model, kernel_model, repair_model = (models.CharField(max_length=CONFIG[step].max_length, blank=True)
                                               for step in STEP_MODELS.values())
    effort = models.CharField(max_length=16, blank=True)  # LLM effort label (output_config.effort)
    # Extended thinking before each reply, in tokens (0: off; the API's least is 1024).
    thinking_tokens = models.PositiveIntegerField(default=CONFIG.thinking_tokens.default)
    device = models.CharField(max_length=8, choices=Device.choices, default=CONFIG.device.default)

    # The method's knobs: R rounds, B parents, I ideas per parent, K kernels per idea.
    rounds = models.PositiveSmallIntegerField(default=CONFIG.rounds.default)
    parents_per_round = models.PositiveSmallIntegerField(default=CONFIG.parents_per_round.default)
    ideas_per_parent = models.PositiveSmallIntegerField(default=CONFIG.ideas_per_parent.default)
    kernels_per_idea = models.PositiveSmallIntegerField(default=CONFIG.kernels_per_idea.default)
    bank_size = models.PositiveSmallIntegerField(default=CONFIG.bank_size.default)
    repair_attempts = models.PositiveSmallIntegerField(default=CONFIG.repair_attempts.default)
    # How many of a round's fastest correct kernels carry their profile (runner/common/roofline.py) into
    # the next ideas calls; 0: none.
    profiled_kernels = models.PositiveSmallIntegerField(default=CONFIG.profiled_kernels.default)
    allow_library = models.BooleanField(default=CONFIG.allow_library.default)
    # Agent mode: a kernel call may compile, check and profile drafts (runner jobs) before it submits,
    # at most `agent_tool_calls` times per kernel.
    agent_mode = models.BooleanField(default=CONFIG.agent_mode.default)
    agent_tool_calls = models.PositiveSmallIntegerField(default=CONFIG.agent_tool_calls.default)
    # Kept to its owner (and administrators) in the team's memory: its lessons, idea outcomes and kernels
    # reach no one else's prompts, seeds or memory pages (its own page stays the team's to read).
    private = models.BooleanField(default=CONFIG.private.default)
    # Baselines the runner times beside eager and torch.compile's default for every candidate (any of
    # searches.config.MORE_BASELINES): a run of searches is then scored against them too.
    baselines = models.JSONField(default=list, blank=True)
    # The kernel language asked for (proposers.prompts.LANGUAGES); "" for the device's default.
    language = models.CharField(max_length=16, blank=True)
    # Stop once this many rounds in a row found nothing faster (0: run all rounds).
    stale_rounds = models.PositiveSmallIntegerField(default=CONFIG.stale_rounds.default)
    # A branch whose kernel reaches this % of its speed of light gets no more ideas (0: never stop).
    sol_stop_percent = models.PositiveSmallIntegerField(default=CONFIG.sol_stop_percent.default)
    # The team's memory (memory/bank.py): how far the priors of similar problems may reorder a parent's
    # ideas, in % (0: the bank off, no priors shown); start from similar problems' best kernels and the playbook's
    # menu; stop once the last rounds' gain per dollar falls under this many % points (0: never).
    prior_weight = models.PositiveSmallIntegerField(default=CONFIG.prior_weight.default)
    seed_from_team = models.BooleanField(default=CONFIG.seed_from_team.default)
    stop_points_per_dollar = models.FloatField(default=CONFIG.stop_points_per_dollar.default)
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

    @property
    def capabilities(self) -> Capabilities:
        """What its proposer can do (proposers/capabilities.py): callers ask this, never the proposer's name."""
        return proposer_capabilities(self.proposer)

    def job_options(self) -> dict:
        """The runner's options for every evaluation of its candidates (evaluation/worker.py reads them)."""
        return {"allow_library": self.allow_library, **({"baselines": list(self.baselines)} if self.baselines else {})}

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
    tool_calls = models.PositiveSmallIntegerField(default=0)  # agent mode: compile/check/profile runs it made
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
    # What kind of transformation it is (memory.keys.TECHNIQUES), and the speedup over its parent the
    # proposer expected: the idea bank's key and its calibration.
    technique = models.CharField(max_length=32, blank=True, db_index=True)
    expected_speedup = models.FloatField(null=True, blank=True)
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
