"""A search's proposer calls, many in flight at once.

Every call the search can make right now (the starting kernel, ideas for a parent, an idea's
missing implementation, a broken kernel's repair) is a `Call`: prepared here from the database,
sent on a worker thread (network only: the proposer, no database), and saved back here as soon
as it lands, under the search's lock with the same idempotent keys as before (idea slot, kernel
variant, one repair per broken kernel), so each kernel is queued for evaluation the moment its
reply arrives and a restart never duplicates.

Bounds: at most SEARCH_PARALLEL_CALLS calls of one search in flight, and the API key's own
limit (searches/engine/gate.py, shared by every process). The first ideas call of a round goes
alone until the API begins its reply, so the prompt cache (tools, rules, problem, bank) is written
once before the fan-out reads it. Budgets hold with calls in flight: a kernel-making call counts
against the candidates budget when sent, and a call's cost is reserved (the mean of the search's
calls so far) before it is sent. Pausing or cancelling the search closes the proposer: calls in flight are
abandoned, recorded as failed, and make no kernel.
"""

import logging
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import islice
from typing import Callable, Iterator

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Avg, F

from searches.services import events
from proposers.base import REPLY_BEGUN, Exchange, IdeaProposal, KernelProposal, ProposerError
from searches.models import Idea, Kernel, ProposerCall, Search

from . import context, evidence, records

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5  # how often a search with calls in flight looks for new work, a pause or a cancel
ABANDON_WAIT_S = 1.0  # for the calls of a stopped search to end, keeping what they paid for


@dataclass
class Call:
    key: tuple  # what it makes: ("seed",), ("ideas", parent), ("kernel", idea, variant), ("repair", kernel)
    send: Callable[[object], tuple]  # (proposer) -> the proposer's answer; no database
    save: Callable[[object, ProposerError | None], None]  # (answer or None, error): records it, under the lock
    makes_kernel: bool = True
    begun: Future = field(default_factory=Future)  # done once the API has begun its reply (its prompt cached)


def run(search_id: int, ready: Callable[[Search, set, set], Iterator[Call]]) -> bool:
    """Send the search's ready calls, at most SEARCH_PARALLEL_CALLS at a time, saving each as it lands
    and asking `ready(search, keys in flight, keys of those whose reply has begun)` (lazily: only as
    many as there is room for) for more while any is in flight, and again as a reply begins. True
    when a call was made."""
    search = Search.objects.select_related("problem").get(pk=search_id)
    proposer = context.new_proposer(search)  # raises ProposerError (no key): the caller pauses
    width = max(1, settings.SEARCH_PARALLEL_CALLS)
    flying: dict[Future, Call] = {}
    made = False
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix=f"search-{search_id}")
    try:
        while True:
            search = Search.objects.select_related("problem").get(pk=search_id)
            if search.status != Search.Status.RUNNING:
                _abandon(proposer, flying, search)
                return made or bool(flying)
            room = min(width - len(flying), _budget_room(search, flying))
            if room > 0:
                begun = {c.key for c in flying.values() if c.begun.done()}
                for call in islice(ready(search, {c.key for c in flying.values()}, begun), room):
                    flying[pool.submit(_send, proposer, call)] = call
            if not flying:
                return made
            beginning = [c.begun for c in flying.values() if not c.begun.done()]
            done, _ = wait([*flying, *beginning], timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                if future not in flying:
                    continue  # a reply began: look for the calls that waited for it
                call = flying.pop(future)
                answer, error = future.result()
                if error is not None and not Search.objects.filter(pk=search_id, status=Search.Status.RUNNING).exists():
                    flying[future] = call  # a stopped search's call (a tool wait it ended): abandoned, below
                    continue
                call.save(answer, error)
                made = True
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        context.close_proposer(proposer)


def _send(proposer, call: Call) -> tuple:
    REPLY_BEGUN.set(lambda: call.begun.done() or call.begun.set_result(None))  # this worker thread's own context
    try:
        return call.send(proposer), None
    except ProposerError as exc:
        return None, exc
    finally:
        REPLY_BEGUN.set(None)
        close_old_connections()  # a proposer that touched the database leaves no connection behind


def _abandon(proposer, flying: dict, search: Search) -> None:
    """The search left RUNNING: stop its calls in flight (closing the proposer's connections) and
    record them as failed, so their partial cost is not lost and no kernel comes of them."""
    if not flying:
        return
    context.close_proposer(proposer)
    wait(list(flying), timeout=ABANDON_WAIT_S)  # calls notice the stop within it (closed connections, tool waits)
    for future, call in flying.items():
        future.cancel()
        # a call that ended on the stop (an agent's tool wait) brings the turns it had paid for
        ended = future.result()[1] if future.done() and not future.cancelled() else None
        reason = f"abandoned: the search was {search.get_status_display().lower()} while the call was in flight"
        with transaction.atomic():
            records.lock_search(search.id)
            records.record_call(search, _purpose(call), getattr(ended, "exchange", None) or Exchange(), error=reason)
    flying.clear()


def _budget_room(search: Search, flying: dict) -> int:
    """How many more calls the budgets allow with `flying` in flight (a large number when none is set)."""
    room = 1 << 20
    if search.max_candidates is not None:
        # agent mode: a kernel call may also make its cap of tool runs, each counted as a candidate
        each = 1 + (search.agent_tool_calls if search.agent_mode else 0)
        reserved = each * sum(c.makes_kernel for c in flying.values())
        left = search.max_candidates - records.candidates_spent(search) - reserved
        # a lone call may start on less: the toolbox refuses the runs the budget has no room for
        room = min(room, max(left // each, int(left > 0 and not flying)))
    if search.max_tokens is None and search.max_cost_usd is None:
        return room
    means = _mean_call_by_step(search)
    if not means:  # nothing to estimate a call's cost from: one call at a time until there is
        return min(room, 1 - len(flying))
    fallback = {k: max(m[k] for m in means.values()) for k in ("tokens", "cost")}
    for key, budget, spent in (("tokens", search.max_tokens, search.tokens_in + search.tokens_out),
                               ("cost", search.max_cost_usd, search.cost_usd)):
        if budget is None:
            continue
        # Each call in flight reserves the mean of its own step's calls (its step's model and cache); the
        # next call, whichever its step, the dearest step's mean.
        reserved = sum(means.get(_purpose(c), fallback)[key] for c in flying.values())
        room = min(room, _calls_within(budget - spent - reserved, fallback[key]))
    return room


def _mean_call_by_step(search: Search) -> dict:
    """{purpose: {"tokens", "cost"}}: the mean call of each step so far (steps may use different models)."""
    tokens = F("input_tokens") + F("output_tokens") + F("cache_read_tokens") + F("cache_write_tokens")
    rows = (ProposerCall.objects.filter(search=search).values("purpose")
            .annotate(tokens=Avg(tokens), cost=Avg("cost_usd")))
    return {row["purpose"]: {"tokens": float(row["tokens"] or 0), "cost": float(row["cost"] or 0)} for row in rows}


def _calls_within(left: float, per_call: float) -> int:
    if left <= 0:
        return 0
    return 1 << 20 if per_call <= 0 else max(1, int(left // per_call))


def _purpose(call: Call) -> str:
    return {"seed": ProposerCall.Purpose.KERNEL, "ideas": ProposerCall.Purpose.IDEAS,
            "kernel": ProposerCall.Purpose.KERNEL, "repair": ProposerCall.Purpose.REPAIR}[call.key[0]]


# --- the calls ---------------------------------------------------------------------------------------------


def seed_call(search: Search) -> Call:
    problem = context.problem_context(search)

    def save(answer, error):
        if error is not None:
            records.proposer_gave_up(search, ProposerCall.Purpose.KERNEL, error, "write the starting kernel")
            return
        proposal, exchange = answer
        with transaction.atomic():
            records.lock_search(search.id)
            call = records.record_call(search, ProposerCall.Purpose.KERNEL, exchange)
            if Kernel.objects.filter(search=search, origin=Kernel.Origin.SEED).exists():
                return  # another orchestrator got there first; the call is still paid for
            # round 1's parent: on a GPU its counters come with its verdict, so round 1 waits for no rerun
            records.save_kernel(search, proposal, call=shown_call(search, call), origin=Kernel.Origin.SEED, round=0,
                                name="starting kernel", counters=evidence.applies(search))

    return Call(("seed",), lambda proposer: proposer.starting_kernel(problem), save)


def ideas_call(search: Search, parent_id: int) -> Call:
    parent = Kernel.objects.select_related("idea").get(pk=parent_id)
    problem, shown = context.ideas_context(search), context.kernel_context(parent)
    tried, round_number = context.tried_ideas(search), search.current_round
    asked = context.ideas_asked(search, problem)

    def send(proposer):
        return proposer.ideas(problem, shown, tried, asked, briefs=search.kernels_per_idea)

    def save(answer, error):
        if error is not None:
            records.proposer_gave_up(search, ProposerCall.Purpose.IDEAS, error, f"propose ideas for kernel #{parent_id}")
            return
        proposals, exchange = answer
        origin = Idea.Origin.LLM if search.capabilities.llm else Idea.Origin.PLAYBOOK
        with transaction.atomic():
            locked = records.lock_search(search.id)
            call = records.record_call(search, ProposerCall.Purpose.IDEAS, exchange)
            plan = round_plan(locked, round_number)
            if parent_id in plan["asked"]:
                return
            for slot, proposal in enumerate(context.ideas_kept(search, proposals, problem)):
                idea = Idea.objects.create(
                    search=search, parent_kernel_id=parent_id, round=round_number, slot=slot,
                    title=(proposal.title or f"idea {slot + 1}")[:300], description=proposal.description,
                    origin=origin, call=call, technique=proposal.technique or "other",
                    expected_speedup=proposal.expected_speedup,
                    briefs=[str(b)[:4000] for b in proposal.briefs[: search.kernels_per_idea]],
                )
                events.publish(search.id, "idea.created", events.idea_payload(idea))
            plan["asked"].append(parent_id)
            records.save_plan(locked, round_number, plan)

    return Call(("ideas", parent_id), send, save, makes_kernel=False)


def kernel_call(search: Search, idea: Idea, variant: int) -> Call:
    parent = idea.parent_kernel
    problem = context.problem_context(search)
    shown = context.kernel_context(parent) if parent else None
    briefs = idea.briefs if isinstance(idea.briefs, list) else []
    brief = briefs[variant] if variant < len(briefs) else ""

    def send(proposer):  # each variant sees its own brief, never its siblings'
        return proposer.kernel(problem, shown, IdeaProposal(idea.title, idea.description), variant, brief=brief)

    def save(answer, error):
        proposal, exchange = _kernel_answer(answer, error)
        origin = Kernel.Origin.LLM if search.capabilities.llm else Kernel.Origin.PLAYBOOK
        with transaction.atomic():
            records.lock_search(search.id)
            call = records.record_call(search, ProposerCall.Purpose.KERNEL, exchange, error=str(error or ""))
            if Kernel.objects.filter(idea=idea, variant=variant).exists():
                return
            records.save_kernel(search, proposal, call=shown_call(search, call), origin=origin, round=idea.round,
                                idea=idea, parent=parent, variant=variant,
                                name=proposal.name or f"r{idea.round} idea {idea.id} v{variant + 1}")

    return Call(("kernel", idea.id, variant), send, save)


def repair_call(search: Search, broken: Kernel, turn: int, root: Kernel) -> Call:
    """Repair turn `turn`: the broken kernel with the runner's verdict, reason and evidence; the fix
    is the broken kernel's child ("repair 1 of #12")."""
    problem, shown = context.problem_context(search), context.kernel_context(broken)
    failure = context.failure_of(search, broken, turn, root)

    def save(answer, error):
        proposal, exchange = _kernel_answer(answer, error)
        with transaction.atomic():
            records.lock_search(search.id)
            call = records.record_call(search, ProposerCall.Purpose.REPAIR, exchange, error=str(error or ""))
            if Kernel.objects.filter(repair_of=broken).exists():
                return
            records.save_kernel(search, proposal, call=call, origin=Kernel.Origin.REPAIR, round=broken.round,
                                idea=broken.idea, parent=broken, repair_of=broken, name=f"repair {turn} of #{root.id}")
            records.propose_lesson(search, broken, proposal.lesson)

    return Call(("repair", broken.id), lambda proposer: proposer.repair(problem, shown, failure), save)


def _kernel_answer(answer, error: ProposerError | None) -> tuple:
    """(proposal, exchange) of a kernel call; a failed call becomes a no-code proposal saying why."""
    if error is None:
        return answer
    return KernelProposal(source="", note=str(error)), error.exchange or Exchange()


def shown_call(search: Search, call: ProposerCall) -> ProposerCall | None:
    """The call a kernel shows as "the exchange that produced it": none for the playbook, whose
    kernels are hand-written text, not a model's reply (the call is still kept, at no cost)."""
    return call if search.capabilities.llm else None


def round_plan(search: Search, round_number: int) -> dict:
    plan = (search.round_parents or {}).get(str(round_number)) or {}
    return {"parents": list(plan.get("parents", [])), "asked": list(plan.get("asked", []))}
