"""Writes on searches: start, pause, resume, cancel, fork, and the ideas people add."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation import queue, scheduling
from evaluation.models import EvaluationJob
from lib.ratelimit import OverQuota
from live import events
from proposers.prompts import LANGUAGES
from searches.engine.kick import kick
from searches.models import Device, Idea, Kernel, Problem, Search, Verdict
from searches.selectors.ideas import team_seeds
from searches.selectors.searches import search_proposer_unavailable

from .jobs import job_fail
from .kernels import kernel_submit
from .permissions import require_steer


def active_searches(user) -> int:
    """The person's searches queued or running: what their search cap counts (evaluation/scheduling.py)."""
    return Search.objects.filter(created_by=user, status__in=Search.ACTIVE).count()


def search_usage(user) -> dict:
    """What the person has waiting, against the caps (the 429 page and the header show it)."""
    return scheduling.usage(user, active_searches)


# Search knobs and the limits the form and the command enforce: (smallest, largest).
SEARCH_KNOB_LIMITS = {
    "rounds": (1, 50),
    "parents_per_round": (1, 20),
    "ideas_per_parent": (1, 20),
    "kernels_per_idea": (1, 20),
    "bank_size": (0, 50),
    "repair_attempts": (0, 5),
    "profiled_kernels": (0, 20),
    "stale_rounds": (0, 50),
    "sol_stop_percent": (0, 100),
    "thinking_tokens": (0, 64000),
    "agent_tool_calls": (1, 20),  # agent mode: tool runs per kernel call
    "prior_weight": (0, 100),  # % the team's priors may reorder a parent's ideas (memory/bank.py rank)
}
STOP_POINTS_PER_DOLLAR_MAX = 1e6
THINKING_LEAST = 1024  # the Messages API's smallest thinking budget


SEARCH_FORK_OVERRIDES = set(SEARCH_KNOB_LIMITS) | {
    "proposer", "model", "effort", "device", "allow_library", "max_candidates", "max_tokens", "max_cost_usd", "name",
    "language", "agent_mode", "seed_from_team", "stop_points_per_dollar", "private", *Search.STEP_MODELS.values(),
}


SEARCH_EFFORTS = ("low", "medium", "high", "xhigh", "max")  # the Messages API's output_config.effort


def _search_check_knobs(knobs: dict) -> None:
    for key, (low, high) in SEARCH_KNOB_LIMITS.items():
        value = knobs.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValidationError(f"{key.replace('_', ' ')} must be a whole number from {low} to {high} (got {value!r}).",
                                  code=key)
    for key in ("max_candidates", "max_tokens"):
        value = knobs.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValidationError(f"{key.replace('_', ' ')} must be a whole number of at least 1, or empty for no limit.",
                                  code=key)
    cost = knobs.get("max_cost_usd")
    if cost is not None and not (isinstance(cost, (int, float)) and 0 < cost < float("inf")):
        raise ValidationError("max cost (USD) must be a positive amount, or empty for no limit.", code="max_cost_usd")
    if knobs.get("device") not in Device.values:
        raise ValidationError(f"Unknown device {knobs.get('device')!r}: choose one of {', '.join(Device.values)}.",
                           code="device")
    language = knobs.get("language")
    if language and (language not in LANGUAGES or LANGUAGES[language][1] != knobs.get("device")):
        fits = [key for key, (_, device, _) in LANGUAGES.items() if device == knobs.get("device")]
        raise ValidationError(f"Language {language!r} does not fit a {knobs.get('device')} search: choose one of "
                              f"{', '.join(fits)}, or leave it empty for the device's default.", code="language")
    if 0 < (knobs.get("thinking_tokens") or 0) < THINKING_LEAST:
        raise ValidationError(f"A thinking budget is at least {THINKING_LEAST} tokens (or 0: no thinking).",
                              code="thinking_tokens")
    stop = knobs.get("stop_points_per_dollar", 0)
    if not isinstance(stop, (int, float)) or isinstance(stop, bool) or not 0 <= stop <= STOP_POINTS_PER_DOLLAR_MAX:
        raise ValidationError("the gain-per-dollar stop must be a number of points per dollar from 0 (off) to "
                              f"{STOP_POINTS_PER_DOLLAR_MAX:g}.", code="stop_points_per_dollar")
    if knobs.get("effort") and knobs["effort"] not in SEARCH_EFFORTS:
        raise ValidationError(f"Unknown effort {knobs['effort']!r}: choose one of {', '.join(SEARCH_EFFORTS)}, or leave "
                           "it empty for the model's default.", code="effort")


def _search_check_startable(*, problem: Problem, proposer: str, device: str) -> None:
    if problem.validation_status != Problem.Validation.OK:
        if problem.validation_status in (Problem.Validation.PENDING, Problem.Validation.RUNNING):
            raise ValidationError(
                f"Problem “{problem.name}” is still being validated; start the search once validation is done "
                "(is `python manage.py evaluator` running?).", code="problem")
        raise ValidationError(
            f"Problem “{problem.name}” did not pass validation ({problem.validation_reason or problem.validation_status}); "
            "fix the problem first.", code="problem")
    reason = search_proposer_unavailable(problem=problem, proposer=proposer, device=device)
    if reason:
        raise ValidationError(reason, code="proposer")


@transaction.atomic
def search_start(*, problem: Problem, user, proposer: str, model: str = "", device: str, rounds: int,
                 parents_per_round: int, ideas_per_parent: int, kernels_per_idea: int, bank_size: int = 2,
                 allow_library: bool = False, max_candidates: int | None = None, max_tokens: int | None = None,
                 max_cost_usd: float | None = None, name: str = "", effort: str = "",
                 repair_attempts: int = 1, profiled_kernels: int = 2, language: str = "", stale_rounds: int = 0,
                 sol_stop_percent: int = 0, thinking_tokens: int = 0, ideas_model: str = "", kernel_model: str = "",
                 repair_model: str = "", prior_weight: int = 50, seed_from_team: bool = False,
                 stop_points_per_dollar: float = 0.0, private: bool = False, agent_mode: bool = False,
                 agent_tool_calls: int = 4) -> Search:
    """Create a search and queue its first step. Refuses, with the reason, a problem that is not
    validated or a proposer that cannot serve it. With `seed_from_team`, the best trusted kernels of
    similar problems are judged on this one first, and its first ideas call offers the playbook's menu."""
    knobs = dict(rounds=rounds, parents_per_round=parents_per_round, ideas_per_parent=ideas_per_parent,
                 kernels_per_idea=kernels_per_idea, bank_size=bank_size, repair_attempts=repair_attempts,
                 profiled_kernels=profiled_kernels, max_candidates=max_candidates, max_tokens=max_tokens,
                 max_cost_usd=max_cost_usd, device=device, language=language or "", stale_rounds=stale_rounds,
                 sol_stop_percent=sol_stop_percent, thinking_tokens=thinking_tokens or 0, prior_weight=prior_weight,
                 stop_points_per_dollar=stop_points_per_dollar or 0.0, agent_tool_calls=agent_tool_calls)
    _search_check_knobs({**knobs, "effort": effort})
    _search_check_startable(problem=problem, proposer=proposer, device=device)
    scheduling.require_search_room(user, active_searches)  # OverQuota past the person's cap on active searches
    search = Search.objects.create(
        problem=problem, created_by=user, proposer=proposer, name=(name or "").strip()[:200],
        model=(model or (settings.ANTHROPIC_MODEL if proposer == Search.Proposer.ANTHROPIC else ""))[:100],
        effort=effort or "", allow_library=bool(allow_library), ideas_model=(ideas_model or "")[:100],
        kernel_model=(kernel_model or "")[:100], repair_model=(repair_model or "")[:100],
        seed_from_team=bool(seed_from_team), private=bool(private), agent_mode=bool(agent_mode), **knobs,
    )
    if search.seed_from_team:
        _search_seed_from_team(search)
    events.publish_search_status(search)
    kick(search.id)
    return search


def _search_seed_from_team(search: Search) -> None:
    """Judge the best trusted kernels of similar problems on this one, beside its starting kernel: the
    fastest that holds here becomes a parent of round 1 like any other."""
    for kernel in team_seeds(search, search.parents_per_round):
        try:
            kernel_submit(user=search.created_by, problem=search.problem, source=kernel.source, search=search,
                          name=f"from the team: #{kernel.id} on {kernel.problem.name}"[:200])
        except (ValidationError, OverQuota):
            continue  # a kernel that cannot be queued here is simply not a start


def _search_locked(search: Search) -> Search:
    return Search.objects.select_for_update().get(pk=search.pk)


# What a pause does, said where it is offered and where it shows.
PAUSE_EFFECT = "queued candidates still finish; nothing new is proposed until it is resumed"


@transaction.atomic
def search_pause(*, search: Search, user) -> Search:
    """Stop proposing new work; candidates already queued are still evaluated."""
    require_steer(search, user, "pause it")
    search = _search_locked(search)
    if search.status not in Search.ACTIVE:
        raise ValidationError(f"Only a queued or running search can be paused; this one is {search.status}.",
                              code="status")
    search.status = Search.Status.PAUSED
    search.stop_reason = f"paused by {_user_label(user)}: {PAUSE_EFFECT}"
    search.save(update_fields=["status", "stop_reason"])
    events.publish_search_status(search)
    return search


@transaction.atomic
def search_resume(*, search: Search, user) -> Search:
    require_steer(search, user, "resume it")
    search = _search_locked(search)
    if search.status != Search.Status.PAUSED:
        raise ValidationError(f"Only a paused search can be resumed; this one is {search.status}.", code="status")
    _search_check_startable(problem=search.problem, proposer=search.proposer, device=search.device)
    try:
        scheduling.require_search_room(search.created_by, active_searches)  # it runs as its starter's again
    except OverQuota as refusal:  # said on the search page, where Resume was pressed
        raise ValidationError(refusal.message, code="cap") from refusal
    search.status = Search.Status.RUNNING
    search.stop_reason = ""
    search.save(update_fields=["status", "stop_reason"])
    for kernel in search.kernels.filter(status=Verdict.FAILED):  # never judged: the worker could not run them
        kernel.status, kernel.reason = Verdict.PENDING, ""
        kernel.save(update_fields=["status", "reason"])
        queue.enqueue_kernel(kernel, options={"allow_library": search.allow_library})
        events.publish(search.id, "kernel.updated", events.kernel_payload(kernel))
    events.publish_search_status(search)
    kick(search.id)
    return search


@transaction.atomic
def search_cancel(*, search: Search, user) -> Search:
    """End the search for good. Queued candidates are dropped (marked failed, with the reason);
    one already running still reports its verdict."""
    require_steer(search, user, "cancel it")
    search = _search_locked(search)
    if search.status in Search.FINISHED:
        raise ValidationError(f"This search has already ended ({search.status}).", code="status")
    search.status = Search.Status.CANCELLED
    search.stop_reason = f"cancelled by {_user_label(user)}"
    search.finished_at = timezone.now()
    search.save(update_fields=["status", "stop_reason", "finished_at"])
    # Locks the jobs alone: the kernel join is an outer one, which PostgreSQL will not lock.
    for job in EvaluationJob.objects.select_for_update(of=("self",)).filter(
        Q(kernel__search=search) | Q(search=search), status=EvaluationJob.Status.QUEUED  # its tool runs too
    ):
        job_fail(job=job, reason="not evaluated: the search was cancelled", reason_code=Kernel.CANCELLED)
    events.publish_search_status(search)
    return search


@transaction.atomic
def search_fork(*, search: Search, user, from_kernel: Kernel | None = None, from_idea: Idea | None = None,
                **overrides) -> Search:
    """A new search that continues from one kernel (or idea) of another, or from its B best
    kernels, with the same knobs unless overridden (proposer, model, effort, R/B/I/K, budgets,
    language, library rule): a playbook search continues with Anthropic in one step. History
    travels as copies: each start's ancestor path (kernels and the ideas between them, shared
    ancestors once) is copied into the new search as FORK kernels carrying their verdicts (their
    benchmark runs stay with the originals), so the new search's tree, bank and prompts show
    where it came from. Round 1 builds on the copies; a forked idea is implemented again in
    round 1 next to the proposer's new ideas."""
    unknown = set(overrides) - SEARCH_FORK_OVERRIDES
    if unknown:
        raise ValidationError(f"Cannot override {', '.join(sorted(unknown))} when forking.", code="overrides")
    if from_kernel is not None and from_idea is not None:
        raise ValidationError("Fork from a kernel or from an idea, not both.", code="fork")
    if from_idea is not None:
        if from_idea.search_id != search.pk or from_idea.parent_kernel_id is None:
            raise ValidationError("That idea does not belong to this search (or has no parent kernel).", code="fork")
        start = from_idea.parent_kernel
    elif from_kernel is not None:
        if from_kernel.search_id != search.pk:
            raise ValidationError("That kernel does not belong to this search.", code="fork")
        start = from_kernel
    knobs = {key: getattr(search, key) for key in SEARCH_FORK_OVERRIDES}
    knobs.update(overrides)
    if from_idea is None and from_kernel is None:
        # The source's best kernels, as many as the fork builds on per round.
        starts = list(Kernel.objects.filter(search=search).ranked().exclude(source="")
                      .order_by("median_ms", "id")[:max(1, int(knobs.get("parents_per_round") or 1))])
        if not starts:
            raise ValidationError("This search has no correct kernel yet: pick a kernel or an idea to fork from.",
                                  code="fork")
    else:
        starts = [start]
    if not starts[0].source.strip():
        raise ValidationError("That kernel has no source to build on; pick another one.", code="fork")
    _search_check_knobs(knobs)
    _search_check_startable(problem=search.problem, proposer=knobs["proposer"], device=knobs["device"])
    if knobs["proposer"] == Search.Proposer.ANTHROPIC and not knobs.get("model"):
        knobs["model"] = settings.ANTHROPIC_MODEL
    scheduling.require_search_room(user, active_searches)
    fork = Search.objects.create(
        problem=search.problem, created_by=user, forked_from=search, forked_from_kernel=starts[0],
        # Named for its source unless a name was given (the knobs carry the source's own name).
        **{**knobs, "name": (overrides.get("name") or f"{str(search)[:193]} (fork)")[:200]},
    )
    copies: dict[int, Kernel] = {}
    parents = [_search_copy_path(fork, kernel, copies).id for kernel in starts]
    fork.current_round = 1
    fork.round_parents = {"1": {"parents": parents, "asked": []}}
    fork.save(update_fields=["current_round", "round_parents"])
    if from_idea is not None:
        idea = Idea.objects.create(search=fork, parent_kernel=copies[starts[0].id], round=1, title=from_idea.title,
                                    description=from_idea.description, origin=from_idea.origin, author=from_idea.author)
        events.publish(fork.id, "idea.created", events.idea_payload(idea))
    events.publish_search_status(fork)
    kick(fork.id)
    return fork


def _search_copy_path(fork: Search, kernel: Kernel, copies: dict) -> Kernel:
    """Copy `kernel` and its ancestors (root first) into `fork`, each once across calls
    (`copies`: original id -> copy); return the copy of `kernel`."""
    path = []
    current = kernel
    while current is not None and current.id not in copies and len(path) < 100:
        path.append(current)
        current = current.parent
    parent_copy = copies.get(current.id) if current is not None else None
    for original in reversed(path):
        idea_copy = None
        if original.idea_id:
            idea = original.idea
            idea_copy = Idea.objects.create(
                search=fork, parent_kernel=parent_copy, round=0, title=idea.title, description=idea.description,
                origin=idea.origin, author=idea.author,
            )
            events.publish(fork.id, "idea.created", events.idea_payload(idea_copy))
        parent_copy = Kernel.objects.create(
            problem_id=original.problem_id, search=fork, idea=idea_copy, parent=parent_copy, round=0,
            name=f"{original.name or 'kernel'} (#{original.id} of search {original.search_id})"[:200],
            source=original.source, origin=Kernel.Origin.FORK, author=original.author, analysis=original.analysis,
            **original.verdict(),
        )
        copies[original.id] = parent_copy
        events.publish(fork.id, "kernel.created", events.kernel_payload(parent_copy))
    return parent_copy


@transaction.atomic
def idea_add(*, search: Search, user, parent_kernel: Kernel, title: str, description: str) -> Idea:
    """A person's idea for a parent kernel, implemented K times by the proposer like its own."""
    require_steer(search, user, "add ideas to it")
    search = _search_locked(search)
    if search.status in Search.FINISHED:
        raise ValidationError(f"This search has ended ({search.status}); fork it to try a new idea.", code="status")
    if search.proposer == Search.Proposer.PLAYBOOK:
        raise ValidationError(
            "This search uses the built-in playbook, which only implements its own ideas: a new idea needs an LLM "
            "to write it. Fork the search with the Anthropic proposer, or submit a hand-written kernel.",
            code="proposer")
    if parent_kernel.search_id != search.pk:
        raise ValidationError("The parent kernel must belong to this search.", code="parent_kernel")
    if not parent_kernel.source.strip():
        raise ValidationError("That kernel has no source to build on; pick another parent.", code="parent_kernel")
    title = (title or "").strip()
    if not title:
        raise ValidationError("Give the idea a title.", code="title")
    if len(title) > 300:
        raise ValidationError("Keep the title under 300 characters; put the details in the description.", code="title")
    idea = Idea.objects.create(search=search, parent_kernel=parent_kernel, round=search.current_round, title=title,
                                description=(description or "").strip(), origin=Idea.Origin.USER, author=user)
    events.publish(search.id, "idea.created", events.idea_payload(idea))
    kick(search.id)
    return idea


def _user_label(user) -> str:
    return getattr(user, "get_username", lambda: "")() or "a user"
