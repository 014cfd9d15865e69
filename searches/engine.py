"""The search loop: pick parents, ask for ideas, fan out kernels, select survivors.

A search is a resumable state machine. `advance(search_id)` (run by the django-q2 task
`advance_search`) does one piece of work at a time until nothing is left to do right now:

  round 0   the proposer's starting kernel (a fork starts at round 1 with its copied history)
  round r   for each parent chosen when the round started: ask for I ideas (one call,
            conditioned on the ideas tried so far and their outcomes), then implement each idea
            K times; every candidate becomes a Kernel row and an EvaluationJob at once, so the
            evaluation workers start while the proposer is still writing (pipelining). A
            candidate that fails to compile gets up to `repair_attempts` repairs.
  next      once every job of the round has finished, the best correct kernels become the
            next round's parents; after R rounds, or when a budget is reached, the search ends.

Every piece of work is saved as soon as it is produced, under the search row's lock, with a
unique key (idea slot, kernel variant, one repair per broken kernel, one starting kernel), so
re-running `advance` after a crash continues where it stopped and never duplicates. A lease on
the search row keeps one orchestrator at a time; work that arrives while the lease is held
sets `engine_kicked`, and the holder loops again before letting go. Proposer calls run outside
any database transaction. Pause and cancel are honoured between steps.
"""

import logging
import threading
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from . import events, jobs, selectors
from .models import EvaluationJob, Idea, Kernel, ProposerCall, Search, Verdict
from .proposers.base import (
    Exchange,
    IdeaProposal,
    KernelContext,
    KernelProposal,
    ProblemContext,
    Proposer,
    ProposerError,
    TriedIdea,
    get_proposer,
)

log = logging.getLogger(__name__)

# The orchestrator's lease on a search: renewed by a thread while it works, so a killed task
# worker blocks its searches for at most this long (then a re-kick takes over).
LEASE_SECONDS = 60
# Kernels the engine made itself (budgets count these; user kernels and fork copies are free).
GENERATED = (Kernel.Origin.SEED, Kernel.Origin.LLM, Kernel.Origin.PLAYBOOK, Kernel.Origin.REPAIR)
REPAIRABLE = GENERATED
TRIED_IDEAS_SHOWN = 40
STEP_TRIES, STEP_RETRY_SECONDS = 3, 0.5


# --- kicking: how a search gets advanced -----------------------------------------------------


def _queue_advance(search_id: int) -> None:
    from django_q.tasks import async_task

    async_task("searches.tasks.advance_search", search_id, task_name=f"advance-search-{search_id}-{uuid.uuid4().hex[:8]}")


_kicker = _queue_advance


def set_kicker(kicker) -> None:
    """Replace how a search is advanced (the foreground `search` command drives it in-process)."""
    global _kicker
    _kicker = kicker or _queue_advance


def kick(search_id: int) -> None:
    """Ask for `advance(search_id)` after the current transaction commits."""
    transaction.on_commit(lambda: _kicker(search_id))


def rekick_stalled() -> int:
    """Safety net for lost tasks (a killed task worker, a lost broker message): kick every active
    search whose engine lease is free or ran out. Extra kicks are harmless."""
    now = timezone.now()
    stalled = Search.objects.filter(status__in=Search.ACTIVE).exclude(engine_lease_until__gt=now)
    ids = list(stalled.values_list("id", flat=True))
    for search_id in ids:
        _kicker(search_id)
    return len(ids)


# --- the lease loop ----------------------------------------------------------------------------


def advance(search_id: int) -> None:
    """Do every piece of work the search has right now, then return. Safe to call any time,
    from any process, any number of times."""
    token = uuid.uuid4().hex
    if not _acquire(search_id, token):
        return
    renewer = _LeaseRenewer(search_id, token)
    renewer.start()
    try:
        _work(search_id, token)
    except Exception as exc:  # a dead orchestrator must not leave the search spinning at "running"
        log.exception("search %s: engine error", search_id)
        fail_search(search_id, f"the search engine stopped on an error: {type(exc).__name__}: {exc}")
        _release(search_id, token, force=True)
    except BaseException:
        _release(search_id, token, force=True)
        raise
    finally:
        renewer.stop()


def _work(search_id: int, token: str) -> None:
    while True:
        try:
            progressed = _step_retrying(search_id)
        except ProposerError as exc:  # e.g. no API key in this worker's environment
            _set_status(search_id, Search.Status.PAUSED, f"paused: {exc}")
            progressed = False
        if progressed:
            _renew(search_id, token)
            continue
        if _release(search_id, token):
            return


def _step_retrying(search_id: int) -> bool:
    """A step, tried again on a database error (a lock held past the busy timeout, a dropped
    connection): steps are idempotent. Past the last try the error ends the search."""
    for attempt in range(1, STEP_TRIES + 1):
        try:
            return _step(search_id)
        except DatabaseError:
            if attempt == STEP_TRIES:
                raise
            log.warning("search %s: database error in a step; trying again", search_id, exc_info=True)
            time.sleep(STEP_RETRY_SECONDS * attempt)
    return False  # STEP_TRIES < 1: no step taken


class _LeaseRenewer(threading.Thread):
    """Keeps the orchestrator's lease fresh during long proposer calls."""

    def __init__(self, search_id: int, token: str):
        super().__init__(daemon=True, name=f"search-lease-{search_id}")
        self.search_id, self.token = search_id, token
        self._done = threading.Event()

    def run(self) -> None:
        try:
            while not self._done.wait(LEASE_SECONDS / 3):
                try:
                    _renew(self.search_id, self.token)
                except DatabaseError:
                    log.warning("search %s: lease renewal skipped (database busy)", self.search_id)
        finally:
            connection.close()

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=5)


def _acquire(search_id: int, token: str) -> bool:
    now = timezone.now()
    with transaction.atomic():
        search = Search.objects.select_for_update().filter(pk=search_id).first()
        if search is None:
            return False
        if search.engine_lease_owner and search.engine_lease_until and search.engine_lease_until > now:
            Search.objects.filter(pk=search_id).update(engine_kicked=True)
            return False
        Search.objects.filter(pk=search_id).update(
            engine_lease_owner=token, engine_lease_until=now + timedelta(seconds=LEASE_SECONDS), engine_kicked=False
        )
    return True


def _renew(search_id: int, token: str) -> None:
    with transaction.atomic():
        Search.objects.filter(pk=search_id, engine_lease_owner=token).update(
            engine_lease_until=timezone.now() + timedelta(seconds=LEASE_SECONDS)
        )


def _release(search_id: int, token: str, force: bool = False) -> bool:
    """Let go of the lease, unless work arrived meanwhile: then keep it and report False."""
    with transaction.atomic():
        search = Search.objects.select_for_update().filter(pk=search_id, engine_lease_owner=token).first()
        if search is None:
            return True
        if search.engine_kicked and not force:
            Search.objects.filter(pk=search_id).update(engine_kicked=False)
            return False
        Search.objects.filter(pk=search_id).update(engine_lease_owner="", engine_lease_until=None)
    return True


# --- one step ----------------------------------------------------------------------------------


def _step(search_id: int) -> bool:
    """Do the next piece of work. True when something was done (call again)."""
    search = Search.objects.select_related("problem").get(pk=search_id)
    if search.status == Search.Status.QUEUED:
        _set_status(search_id, Search.Status.RUNNING)
        return True
    if search.status != Search.Status.RUNNING:
        return False

    stop_reason = budget_reached(search)
    if not stop_reason:
        round_work = _seed_work if search.current_round == 0 else _round_work
        if round_work(search):
            return True
        if _repair_work(search):
            return True
    if jobs.pending_for_search(search_id).exists():
        return False  # each verdict kicks the search again
    if stop_reason:
        _finish(search_id, Search.Status.COMPLETED, stop_reason)
        return True
    return _start_next_round(search_id)


def budget_reached(search: Search) -> str:
    """Why the search may not spend more, or "" while it may."""
    if search.max_candidates is not None:
        made = Kernel.objects.filter(search=search, origin__in=GENERATED).count()
        if made >= search.max_candidates:
            return f"budget reached: {made} of at most {search.max_candidates} candidates"
    if search.max_tokens is not None and search.tokens_in + search.tokens_out >= search.max_tokens:
        return f"budget reached: {search.tokens_in + search.tokens_out} of at most {search.max_tokens} tokens"
    if search.max_cost_usd is not None and search.cost_usd >= search.max_cost_usd:
        return f"budget reached: ${search.cost_usd:.4f} of at most ${search.max_cost_usd:.4f}"
    return ""


def _seed_work(search: Search) -> bool:
    if Kernel.objects.filter(search=search, origin__in=[Kernel.Origin.SEED, Kernel.Origin.FORK]).exists():
        return _implement_next(search)  # user ideas added during round 0
    proposer = proposer_for(search)
    try:
        proposal, exchange = proposer.starting_kernel(problem_context(search))
    except ProposerError as exc:
        _proposer_gave_up(search, ProposerCall.Purpose.KERNEL, exc, "write the starting kernel")
        return True
    with transaction.atomic():
        _lock(search.id)
        call = _record_call(search, ProposerCall.Purpose.KERNEL, exchange)
        if Kernel.objects.filter(search=search, origin=Kernel.Origin.SEED).exists():
            return True  # another orchestrator got there first; the call is still paid for
        _save_kernel(search, proposal, call=call, origin=Kernel.Origin.SEED, round=0, name="starting kernel")
    return True


def _round_work(search: Search) -> bool:
    """Ideas for the next parent that has none, else the next missing implementation."""
    plan = round_plan(search, search.current_round)
    for parent_id in plan["parents"]:
        if parent_id not in plan["asked"]:
            return _ask_ideas(search, parent_id)
        if _implement_next(search, parent_kernel_id=parent_id):
            return True
    return _implement_next(search)  # user ideas, fork-carried ideas


def round_plan(search: Search, round_number: int) -> dict:
    plan = (search.round_parents or {}).get(str(round_number)) or {}
    return {"parents": list(plan.get("parents", [])), "asked": list(plan.get("asked", []))}


def _ask_ideas(search: Search, parent_id: int) -> bool:
    parent = Kernel.objects.select_related("idea").get(pk=parent_id)
    proposer = proposer_for(search)
    try:
        proposals, exchange = proposer.ideas(
            problem_context(search), kernel_context(parent), tried_ideas(search), search.ideas_per_parent
        )
    except ProposerError as exc:
        _proposer_gave_up(search, ProposerCall.Purpose.IDEAS, exc, f"propose ideas for kernel #{parent_id}")
        return True
    origin = Idea.Origin.LLM if search.proposer == Search.Proposer.ANTHROPIC else Idea.Origin.PLAYBOOK
    with transaction.atomic():
        locked = _lock(search.id)
        call = _record_call(search, ProposerCall.Purpose.IDEAS, exchange)
        plan = round_plan(locked, search.current_round)
        if parent_id in plan["asked"]:
            return True
        for slot, proposal in enumerate(proposals[: search.ideas_per_parent]):
            idea = Idea.objects.create(
                search=search, parent_kernel_id=parent_id, round=search.current_round, slot=slot,
                title=(proposal.title or f"idea {slot + 1}")[:300], description=proposal.description,
                origin=origin, call=call,
            )
            events.publish(search.id, "idea.created", events.idea_payload(idea))
        plan["asked"].append(parent_id)
        _save_plan(locked, search.current_round, plan)
    return True


def _implement_next(search: Search, parent_kernel_id: int | None = None) -> bool:
    ideas = Idea.objects.filter(search=search, round=search.current_round).order_by("id")
    if parent_kernel_id is not None:
        ideas = ideas.filter(parent_kernel_id=parent_kernel_id, slot__isnull=False)
    for idea in ideas.select_related("parent_kernel__idea"):
        done = set(Kernel.objects.filter(idea=idea, variant__isnull=False).values_list("variant", flat=True))
        for variant in range(search.kernels_per_idea):
            if variant not in done:
                _implement(search, idea, variant)
                return True
    return False


def _implement(search: Search, idea: Idea, variant: int) -> None:
    proposer = proposer_for(search)
    parent = idea.parent_kernel
    try:
        proposal, exchange = proposer.kernel(
            problem_context(search), kernel_context(parent) if parent else None,
            IdeaProposal(idea.title, idea.description), variant,
        )
        error = ""
    except ProposerError as exc:
        proposal, exchange, error = KernelProposal(source="", note=str(exc)), exc.exchange or Exchange(), str(exc)
    origin = Kernel.Origin.LLM if search.proposer == Search.Proposer.ANTHROPIC else Kernel.Origin.PLAYBOOK
    with transaction.atomic():
        _lock(search.id)
        call = _record_call(search, ProposerCall.Purpose.KERNEL, exchange, error=error)
        if Kernel.objects.filter(idea=idea, variant=variant).exists():
            return
        _save_kernel(
            search, proposal, call=call, origin=origin, round=idea.round, idea=idea, parent=parent, variant=variant,
            name=proposal.name or f"r{idea.round} idea {idea.id} v{variant + 1}",
        )


def _repair_work(search: Search) -> bool:
    # The playbook's kernels are fixed text: it cannot repair from a compiler message.
    if search.repair_attempts <= 0 or search.proposer == Search.Proposer.PLAYBOOK:
        return False
    broken = (
        Kernel.objects.filter(search=search, status=Verdict.COMPILE_ERROR, origin__in=REPAIRABLE, repairs__isnull=True)
        .select_related("idea")
        .order_by("id")
    )
    for kernel in broken:
        if _repair_depth(kernel) >= search.repair_attempts:
            continue
        _repair(search, kernel)
        return True
    return False


def _repair_depth(kernel: Kernel) -> int:
    depth, current = 0, kernel
    while current.repair_of_id is not None:
        depth += 1
        current = Kernel.objects.only("id", "repair_of_id").get(pk=current.repair_of_id)
    return depth


def _repair(search: Search, broken: Kernel) -> None:
    run = broken.runs.filter(purpose=EvaluationJob.Purpose.SEARCH).order_by("-id").first()
    log_text = (run.compile_log if run and run.compile_log else "") or broken.reason
    proposer = proposer_for(search)
    try:
        proposal, exchange = proposer.repair(problem_context(search), kernel_context(broken), log_text)
        error = ""
    except ProposerError as exc:
        proposal, exchange, error = KernelProposal(source="", note=str(exc)), exc.exchange or Exchange(), str(exc)
    with transaction.atomic():
        _lock(search.id)
        call = _record_call(search, ProposerCall.Purpose.REPAIR, exchange, error=error)
        if Kernel.objects.filter(repair_of=broken).exists():
            return
        _save_kernel(
            search, proposal, call=call, origin=Kernel.Origin.REPAIR, round=broken.round, idea=broken.idea,
            parent=broken.parent, repair_of=broken, name=proposal.name or f"repair of {broken.name or broken.id}",
        )


def _start_next_round(search_id: int) -> bool:
    with transaction.atomic():
        search = _lock(search_id)
        if search.status != Search.Status.RUNNING or jobs.pending_for_search(search_id).exists():
            return False
        if _has_unimplemented_ideas(search):
            return True  # a user idea arrived since the step looked: go implement it
        finished = search.current_round
        if finished >= search.rounds:
            _finish(search_id, Search.Status.COMPLETED, f"completed all {search.rounds} rounds")
            return True
        parents = choose_parents(search)
        if not parents:
            _finish(search_id, Search.Status.COMPLETED,
                    f"stopped after round {finished}: no correct kernel to build on")
            return True
        search.current_round = finished + 1
        search.round_parents = {**(search.round_parents or {}), str(search.current_round): {"parents": parents, "asked": []}}
        search.save(update_fields=["current_round", "round_parents"])
        events.publish(search_id, "round.started", {"round": search.current_round, "parents": parents})
        _publish_progress(search_id)
    return True


def _has_unimplemented_ideas(search: Search) -> bool:
    for idea in Idea.objects.filter(search=search, round=search.current_round):
        if Kernel.objects.filter(idea=idea, variant__isnull=False).count() < search.kernels_per_idea:
            return True
    return False


def choose_parents(search: Search) -> list[int]:
    """The next round's parents: the B fastest correct kernels so far, plus a bank of up to
    `bank_size` more good ones that were never a parent yet (so earlier promising branches get
    explored too). Quarantined (implausibly fast) kernels are never built on."""
    correct = list(
        Kernel.objects.filter(search=search, status=Verdict.CORRECT, quarantined=False, median_ms__isnull=False)
        .order_by("median_ms", "id")
        .values_list("id", flat=True)
    )
    top = correct[: search.parents_per_round]
    used = {pid for plan in (search.round_parents or {}).values() for pid in plan.get("parents", [])}
    bank = [kid for kid in correct[search.parents_per_round:] if kid not in used][: search.bank_size]
    return top + bank


# --- saving --------------------------------------------------------------------------------------


def _lock(search_id: int) -> Search:
    return Search.objects.select_for_update().get(pk=search_id)


def _save_plan(search: Search, round_number: int, plan: dict) -> None:
    search.round_parents = {**(search.round_parents or {}), str(round_number): plan}
    search.save(update_fields=["round_parents"])


def _save_kernel(search: Search, proposal: KernelProposal, *, call, origin, round, name, idea=None, parent=None,
                 variant=None, repair_of=None) -> Kernel:
    """A candidate: a Kernel row, plus its evaluation job when it has code. Inside a transaction."""
    source = proposal.source or ""
    status, reason = Verdict.PENDING, ""
    if not source.strip():
        status, reason = Verdict.NO_CODE, proposal.note or "the proposer's reply had no usable code"
    elif len(source.encode()) > settings.KERNEL_SOURCE_MAX_BYTES:
        status, reason = Verdict.REJECTED, f"the kernel source is larger than {settings.KERNEL_SOURCE_MAX_BYTES} bytes"
    try:
        with transaction.atomic():
            kernel = Kernel.objects.create(
                problem_id=search.problem_id, search=search, idea=idea, parent=parent, repair_of=repair_of,
                round=round, variant=variant, name=name[:200], source=source, origin=origin, call=call,
                status=status, reason=reason,
            )
    except IntegrityError:
        raise RuntimeError("duplicate candidate: the engine's idempotency check was bypassed")
    if status == Verdict.PENDING:
        jobs.enqueue_kernel(kernel, options={"allow_library": search.allow_library})
    events.publish(search.id, "kernel.created", events.kernel_payload(kernel))
    return kernel


def _record_call(search: Search, purpose: str, exchange: Exchange, *, error: str = "") -> ProposerCall:
    """Store one proposer call and add its tokens and cost to the search. Inside a transaction."""
    exchange = exchange or Exchange()
    cost = call_cost(exchange)
    call = ProposerCall.objects.create(
        search=search, purpose=purpose, proposer=search.proposer, model=exchange.model or search.model,
        prompt=exchange.prompt, reply=exchange.reply, ok=not error, error=error,
        input_tokens=exchange.input_tokens, output_tokens=exchange.output_tokens,
        cache_read_tokens=exchange.cache_read_tokens, cache_write_tokens=exchange.cache_write_tokens,
        cost_usd=cost, duration_s=exchange.duration_s,
    )
    tokens_in = exchange.input_tokens + exchange.cache_read_tokens + exchange.cache_write_tokens
    if tokens_in or exchange.output_tokens or cost:
        Search.objects.filter(pk=search.pk).update(
            tokens_in=F("tokens_in") + tokens_in, tokens_out=F("tokens_out") + exchange.output_tokens,
            cost_usd=F("cost_usd") + cost,
        )
        _publish_progress(search.pk)
    return call


def call_cost(exchange: Exchange) -> float:
    """USD for one call, from settings.LLM_PRICES (per million tokens; unknown models priced high)."""
    if not (exchange.input_tokens or exchange.output_tokens or exchange.cache_read_tokens or exchange.cache_write_tokens):
        return 0.0
    price = settings.LLM_PRICES.get(exchange.model) or _price_by_prefix(exchange.model) or settings.LLM_DEFAULT_PRICE
    return (
        exchange.input_tokens * price["input"]
        + exchange.output_tokens * price["output"]
        + exchange.cache_write_tokens * price["cache_write"]
        + exchange.cache_read_tokens * price["cache_read"]
    ) / 1_000_000


def _price_by_prefix(model: str):
    # Dated model ids ("claude-sonnet-4-5-20250929") share their family's price.
    for name, price in settings.LLM_PRICES.items():
        if model.startswith(name):
            return price
    return None


def _publish_progress(search_id: int) -> None:
    s = Search.objects.get(pk=search_id)
    events.publish(search_id, "search.progress", {
        "candidates_evaluated": s.candidates_evaluated, "tokens_in": s.tokens_in, "tokens_out": s.tokens_out,
        "cost_usd": s.cost_usd, "current_round": s.current_round,
    })


def _set_status(search_id: int, status: str, stop_reason: str | None = None) -> None:
    with transaction.atomic():
        search = _lock(search_id)
        search.status = status
        fields = ["status"]
        if stop_reason is not None:
            search.stop_reason = stop_reason
            fields.append("stop_reason")
        if status == Search.Status.RUNNING and not search.started_at:
            search.started_at = timezone.now()
            fields.append("started_at")
        if status in Search.FINISHED:
            search.finished_at = timezone.now()
            fields.append("finished_at")
        search.save(update_fields=fields)
        events.publish(search_id, "search.status", {
            "status": search.status, "stop_reason": search.stop_reason, "current_round": search.current_round,
        })


def _finish(search_id: int, status: str, stop_reason: str) -> None:
    with transaction.atomic():
        _set_status(search_id, status, stop_reason)
        if status == Search.Status.COMPLETED:
            _recheck_elites(search_id)


def _recheck_elites(search_id: int) -> None:
    """Queue a verified rerun (fresh process, new seed) of the search's fastest correct kernels,
    quarantined ones included: their badge, or their way into the ranking, depends on it."""
    from . import services  # services imports this module

    elites = (Kernel.objects.filter(search_id=search_id, status=Verdict.CORRECT, median_ms__isnull=False)
              .exclude(origin=Kernel.Origin.FORK).order_by("median_ms")[:settings.ELITE_RECHECKS])
    for kernel in elites:
        services.kernel_request_rerun(kernel=kernel, user=None)


def fail_search(search_id: int, reason: str) -> None:
    """End the search as failed with `reason`; the page and `manage.py search` show it."""
    try:
        _set_status(search_id, Search.Status.FAILED, reason[:2000])
    except Exception:
        log.exception("search %s: could not record the failure", search_id)


def _proposer_gave_up(search: Search, purpose: str, exc: ProposerError, what: str) -> None:
    """The proposer could not (after its own retries): keep the call, pause with the reason.
    Nothing is lost; resuming tries again."""
    with transaction.atomic():
        _lock(search.id)
        _record_call(search, purpose, exc.exchange or Exchange(), error=str(exc) or "failed")
    _set_status(search.id, Search.Status.PAUSED,
                f"paused: the proposer could not {what} ({exc}). Resume the search to try again.")


# --- what the proposer sees ------------------------------------------------------------------------


_proposers: dict = {}


def proposer_for(search: Search) -> Proposer:
    key = (search.proposer, search.model, search.effort)
    if key not in _proposers:
        options = {}
        if search.proposer == Search.Proposer.ANTHROPIC:
            options = {"model": search.model or settings.ANTHROPIC_MODEL, "effort": search.effort}
        _proposers[key] = get_proposer(search.proposer, **options)
    return _proposers[key]


def problem_context(search: Search) -> ProblemContext:
    problem = search.problem
    return ProblemContext(
        name=problem.name, source=problem.source, device=search.device, family=problem.family or None,
        outputs=list((problem.validation or {}).get("outputs") or []), allow_library=search.allow_library,
        description=problem.description,
    )


def kernel_context(kernel: Kernel) -> KernelContext:
    sol = selectors.speed_of_light(kernel.problem, kernel)
    return KernelContext(
        id=kernel.id, source=kernel.source, status=kernel.status, median_ms=kernel.median_ms,
        speedup_vs_eager=kernel.speedup_vs_eager, speedup_vs_compile=kernel.speedup_vs_compile,
        reason=kernel.reason, idea_title=kernel.idea.title if kernel.idea_id else "",
        speed_of_light=(f"{sol['fraction']:.0%} of the speed of light on the {sol['device']} (floor {sol['floor_ms']:.4g} "
                        f"ms, {sol['bound']}-bound: {sol['basis']})") if sol else "",
    )


def tried_ideas(search: Search) -> list[TriedIdea]:
    tried = []
    for idea in Idea.objects.filter(search=search).order_by("-id")[:TRIED_IDEAS_SHOWN]:
        tried.append(TriedIdea(title=idea.title, description=idea.description, outcome=idea_outcome(idea)))
    return list(reversed(tried))


def idea_outcome(idea: Idea) -> str:
    kernels = list(idea.kernels.all())
    if not kernels:
        return "not implemented yet"
    finished = [k for k in kernels if k.status not in (Verdict.PENDING, Verdict.EVALUATING)]
    correct = [k for k in finished if k.status == Verdict.CORRECT]
    if not finished:
        return f"{len(kernels)} implementation(s) still being evaluated"
    if correct:
        best = min((k for k in correct if k.median_ms), key=lambda k: k.median_ms, default=None)
        speed = ""
        if best and best.speedup_vs_eager:
            speed = f", best {best.median_ms:.4g} ms ({best.speedup_vs_eager:.2f}x vs eager"
            speed += f", {best.speedup_vs_compile:.2f}x vs torch.compile)" if best.speedup_vs_compile else ")"
        return f"{len(correct)}/{len(finished)} correct{speed}"
    verdicts = sorted({k.status for k in finished})
    return f"all {len(finished)} failed: {', '.join(verdicts)}"
