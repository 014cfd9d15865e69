"""Writes on searches: start, pause, resume, cancel, fork, and the ideas people add."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation import queue, scheduling
from evaluation.models import EvaluationJob
from lib.ratelimit import OverQuota
from proposers.prompts import LANGUAGES
from proposers.registry import capabilities
from searches.config import SEARCH_CONFIG as CONFIG
from searches.engine.kick import kick
from searches.models import Device, Idea, Kernel, Problem, Search, Verdict
from searches.selectors.ideas import team_seeds
from searches.selectors.searches import search_proposer_unavailable

from . import events
from .jobs import job_fail
from .kernels import kernel_submit
from .permissions import require_steer


def active_searches(user) -> int:
    """The person's searches queued or running: what their search cap counts (evaluation/scheduling.py)."""
    return Search.objects.filter(created_by=user, status__in=Search.ACTIVE).count()


def search_usage(user) -> dict:
    """What the person has waiting, against the caps (the 429 page and the header show it)."""
    return scheduling.usage(user, active_searches)


# What a fork may change: every setting (searches/config.py).
SEARCH_FORK_OVERRIDES = frozenset(CONFIG.names)


def _search_check_knobs(knobs: dict) -> None:
    """Each setting within its limits (searches/config.py), the device known and the language fitting it."""
    for key, why in CONFIG.refusals(knobs):
        raise ValidationError(why, code=key)
    if knobs.get("device") not in Device.values:
        raise ValidationError(f"Unknown device {knobs.get('device')!r}: choose one of {', '.join(Device.values)}.",
                              code="device")
    language = knobs.get("language")
    if language and LANGUAGES[language][1] != knobs.get("device"):
        fits = [key for key, (_, device, _) in LANGUAGES.items() if device == knobs.get("device")]
        raise ValidationError(f"Language {language!r} does not fit a {knobs.get('device')} search: choose one of "
                              f"{', '.join(fits)}, or leave it empty for the device's default.", code="language")


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
def search_start(*, problem: Problem, user, proposer: str, device: str, **values) -> Search:
    """Create a search and queue its first step; a setting left out takes its default (searches/config.py).
    Refuses, with the reason, a setting outside its limits, a problem that is not validated or a proposer
    that cannot serve it. With `seed_from_team`, the best trusted kernels of similar problems are judged on
    this one first, and its first ideas call offers the playbook's menu."""
    knobs = CONFIG.complete({**values, "proposer": proposer, "device": device})
    knobs.update(language=knobs["language"] or "", effort=knobs["effort"] or "",
                 thinking_tokens=knobs["thinking_tokens"] or 0,
                 stop_points_per_dollar=knobs["stop_points_per_dollar"] or 0.0)
    _search_check_knobs(knobs)
    _search_check_startable(problem=problem, proposer=proposer, device=device)
    scheduling.require_search_room(user, active_searches)  # OverQuota past the person's cap on searches queued or running
    search = Search.objects.create(problem=problem, created_by=user, **_search_row(knobs))
    if search.seed_from_team:
        _search_seed_from_team(search)
    events.publish_search_status(search)
    kick(search.id)
    return search


def _search_row(knobs: dict) -> dict:
    """The settings as the Search row keeps them: text cut to its field, flags as booleans, and the
    configured model for a proposer that takes one and was given none."""
    row = dict(knobs)
    for setting in CONFIG:
        if setting.type is bool:
            row[setting.name] = bool(row[setting.name])
        elif setting.type is list:  # in the choices' order, each once
            row[setting.name] = [value for value, _ in setting.choices if value in (row[setting.name] or ())]
        elif setting.type is str and setting.max_length:
            text = row[setting.name] or ""
            row[setting.name] = (text.strip() if setting.name == "name" else text)[:setting.max_length]
    if not row["model"] and capabilities(row["proposer"]).model_setting:
        row["model"] = getattr(settings, capabilities(row["proposer"]).model_setting)
    return row


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
        queue.enqueue_kernel(kernel, options=search.job_options())
        events.publish_kernel(kernel, "kernel.updated")
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
    scheduling.require_search_room(user, active_searches)
    row = _search_row(knobs)
    # Named for its source unless a name was given (the knobs carry the source's own name).
    row["name"] = (overrides.get("name") or f"{str(search)[:193]} (fork)")[:CONFIG.name.max_length]
    fork = Search.objects.create(problem=search.problem, created_by=user, forked_from=search,
                                 forked_from_kernel=starts[0], **row)
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
        events.publish_kernel(parent_copy, "kernel.created")
    return parent_copy


@transaction.atomic
def idea_add(*, search: Search, user, parent_kernel: Kernel, title: str, description: str) -> Idea:
    """A person's idea for a parent kernel, implemented K times by the proposer like its own."""
    require_steer(search, user, "add ideas to it")
    search = _search_locked(search)
    if search.status in Search.FINISHED:
        raise ValidationError(f"This search has ended ({search.status}); fork it to try a new idea.", code="status")
    if not capabilities(search.proposer).people_ideas:
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
