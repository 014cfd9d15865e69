"""The search loop: pick parents, ask for ideas, fan out kernels, select survivors.

A search is a resumable state machine. `advance(search_id)` (run by the django-q2 task
`advance_search`) does the work it has until nothing is left to do right now, its proposer calls
many at a time (searches/engine/calls.py: each saved the moment it lands):

  round 0   the proposer's starting kernel (a fork starts at round 1 with its copied history)
  round r   for each parent chosen when the round started: ask for I ideas, each with K
            distinct implementation briefs (one call, shown the context pack: target, baselines,
            bank, the ideas tried so far with their outcomes and reasons), then implement each
            idea K times, each call with its own brief; every candidate becomes a Kernel row and
            an EvaluationJob at once, so the evaluation workers start while the proposer is
            still writing (pipelining). A candidate judged incorrect, rejected, runtime_error,
            timeout or compile_error gets up to `repair_attempts` repair turns, each its child.
            On a GPU, a parent whose profile its ideas call reads is first rerun with Nsight
            Compute's counters, and that call waits for them (engine/evidence.py); the kernels
            that would be the next parents get that rerun while the round's last verdicts come in.
  next      once every job of the round has finished, the best correct kernels become the
            next round's parents; the search ends with its true reason: the proposer had no new
            ideas, all R rounds done, no improvement in `stale_rounds` rounds, or a budget. With
            no parent because the worker could not run some of the round's kernels (no verdict),
            it pauses instead; resuming queues those kernels again.

Every piece of work is saved as soon as it is produced, under the search row's lock, with a
unique key (idea slot, kernel variant, one repair per broken kernel, one starting kernel), so
re-running `advance` after a crash continues where it stopped and never duplicates. A lease on
the search row keeps one orchestrator at a time; work that arrives while the lease is held
sets `engine_kicked`, and the holder loops again before letting go. Proposer calls run outside
any database transaction, on worker threads. Pause and cancel are honoured between steps and, for
calls in flight, within half a second (they are abandoned).
"""

import logging
import time
import uuid
from itertools import islice

from django.db import DatabaseError, transaction

from evaluation import queue
from searches.services import events
from proposers.base import ProposerError
from searches.models import Idea, Kernel, Search, Verdict
from searches.selectors.ideas import points_per_dollar
from searches.selectors.kernels import speed_of_light
from searches.selectors.searches import search_planned_candidates

from . import calls, evidence, lease, records

log = logging.getLogger(__name__)

GENERATED = REPAIRABLE = records.GENERATED
# Every verdict that says what went wrong gets repair turns; crashed, oom and no-code do not
# (a signal or the memory limit tells the model little it can act on; no code has nothing to fix).
REPAIR_VERDICTS = (Verdict.INCORRECT, Verdict.REJECTED, Verdict.RUNTIME_ERROR, Verdict.TIMEOUT, Verdict.COMPILE_ERROR)
STEP_TRIES, STEP_RETRY_SECONDS = 3, 0.5
GAIN_WINDOW = 2  # the rounds whose gain per dollar the optional stop reads


# --- the loop under the lease ----------------------------------------------------------------------------


def advance(search_id: int) -> None:
    """Do every piece of work the search has right now, then return. Safe to call any time,
    from any process, any number of times."""
    token = uuid.uuid4().hex
    if not lease.acquire(search_id, token):
        return
    renewer = lease.renewer(search_id, token)
    renewer.start()
    try:
        _work(search_id, token)
    except Exception as exc:  # a dead orchestrator must not leave the search spinning at "running"
        log.exception("search %s: engine error", search_id)
        records.fail_search(search_id, f"the search engine stopped on an error: {type(exc).__name__}: {exc}")
        lease.release(search_id, token, force=True)
    except BaseException:
        lease.release(search_id, token, force=True)
        raise
    finally:
        renewer.stop()


def _work(search_id: int, token: str) -> None:
    while True:
        try:
            progressed = _step_retrying(search_id)
        except ProposerError as exc:
            if not records.playbook_cannot_continue(search_id, exc):  # e.g. no API key here
                records.set_status(search_id, Search.Status.PAUSED, f"paused: {exc}")
            progressed = False
        if progressed:
            if not lease.renew(search_id, token):  # another orchestrator holds the search now
                log.warning("search %s: engine lease lost; leaving the search to its new holder", search_id)
                return
            continue
        if lease.release(search_id, token):
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


# --- one step ----------------------------------------------------------------------------------


def _step(search_id: int) -> bool:
    """Do the next piece of work. True when something was done (call again)."""
    search = Search.objects.select_related("problem").get(pk=search_id)
    if search.status == Search.Status.QUEUED:
        records.set_status(search_id, Search.Status.RUNNING)
        return True
    if search.status != Search.Status.RUNNING:
        return False

    stop_reason = budget_reached(search)
    if not stop_reason and calls.run(search_id, _ready):
        return True
    if queue.pending_for_search(search_id).exists():
        if not stop_reason and search.current_round < search.rounds and evidence.applies(search):
            # the parents the round would give now get their counters while its last verdicts come in
            evidence.request(search, choose_parents(search))
        return False  # each verdict (a counter rerun's too) kicks the search again
    if not stop_reason and _parents_waiting(search):
        return False
    if stop_reason:
        records.finish(search_id, Search.Status.COMPLETED, stop_reason)
        return True
    return _start_next_round(search_id)


def _parents_waiting(search: Search) -> bool:
    """A parent of the round waits for its counters before its ideas call (engine/evidence.py)."""
    if search.current_round == 0:
        return False
    plan = calls.round_plan(search, search.current_round)
    return bool(evidence.waiting(search, [p for p in plan["parents"] if p not in plan["asked"]]))


def budget_reached(search: Search) -> str:
    """Why the search may not spend more, or "" while it may."""
    if search.max_candidates is not None:
        made = records.candidates_spent(search)
        if made >= search.max_candidates:
            runs = records.tool_runs(search)
            of_them = f" ({runs} of them tool runs)" if runs else ""
            return f"budget reached: {made} of at most {search.max_candidates} candidates{of_them}"
    if search.max_tokens is not None and search.tokens_in + search.tokens_out >= search.max_tokens:
        return f"budget reached: {search.tokens_in + search.tokens_out} of at most {search.max_tokens} tokens"
    if search.max_cost_usd is not None and search.cost_usd >= search.max_cost_usd:
        return f"budget reached: ${search.cost_usd:.4f} of at most ${search.max_cost_usd:.4f}"
    return ""


def _ready(search: Search, flying: set, begun: set):
    """The calls the search can make now, beside those in `flying` (their keys; `begun`, those whose
    reply has begun), most urgent first: the starting kernel; ideas for the round's parents (the
    round's first ideas call alone until its reply begins, so the fan-out reads the prompt cache it
    has written); the ideas' missing implementations; repairs."""
    if search.current_round == 0:
        if not Kernel.objects.filter(search=search, origin__in=[Kernel.Origin.SEED, Kernel.Origin.FORK]).exists():
            if ("seed",) not in flying:
                yield calls.seed_call(search)
            return
    else:
        plan = calls.round_plan(search, search.current_round)
        first_alone = not plan["asked"] and not any(key[0] == "ideas" for key in begun)
        counting = evidence.waiting(search, plan["parents"])
        for parent_id in plan["parents"]:
            if parent_id in plan["asked"] or ("ideas", parent_id) in flying or parent_id in counting:
                continue
            if first_alone and any(key[0] == "ideas" for key in flying):
                break
            yield calls.ideas_call(search, parent_id)
            flying = flying | {("ideas", parent_id)}
            if first_alone:
                break
    yield from _first_alone_while_cold(search, "kernel", _implementations(search, flying), flying, begun)
    yield from _first_alone_while_cold(search, "repair", _repairs(search, flying), flying, begun)


def _first_alone_while_cold(search: Search, step: str, ready, flying: set, begun: set):
    """Caches are per model: a step whose model no earlier step of the round used sends its first call
    alone until its reply begins, so the round's other calls of that model read the cache it wrote."""
    earlier = {"kernel": ("ideas",), "repair": ("ideas", "kernel")}[step]
    made = Kernel.objects.filter(search=search, round=search.current_round)
    made = made.filter(origin=Kernel.Origin.REPAIR) if step == "repair" else made.filter(variant__isnull=False)
    shared = search.step_model(step) in {search.step_model(s) for s in earlier}
    if shared or any(key[0] == step for key in begun) or made.exists():
        yield from ready
    elif not any(key[0] == step for key in flying):
        yield from islice(ready, 1)


def _implementations(search: Search, flying: set):
    """The round's ideas' missing variants (the LLM's, the user's, a fork's carried ones)."""
    ideas = Idea.objects.filter(search=search, round=search.current_round).select_related("parent_kernel__idea")
    for idea in ideas.order_by("id"):
        done = set(Kernel.objects.filter(idea=idea, variant__isnull=False).values_list("variant", flat=True))
        for variant in range(search.kernels_per_idea):
            if variant not in done and ("kernel", idea.id, variant) not in flying:
                yield calls.kernel_call(search, idea, variant)


def _repairs(search: Search, flying: set):
    # The playbook's kernels are fixed text: it cannot repair from the runner's verdict.
    if search.repair_attempts <= 0 or not search.capabilities.repairs:
        return
    broken = (
        Kernel.objects.filter(search=search, status__in=REPAIR_VERDICTS, origin__in=REPAIRABLE, repairs__isnull=True)
        .select_related("idea", "parent")
        .order_by("id")
    )
    for kernel in broken:
        if ("repair", kernel.id) in flying:
            continue
        depth, root = repair_chain(kernel)
        if depth < search.repair_attempts:
            yield calls.repair_call(search, kernel, depth + 1, root)


def repair_chain(kernel: Kernel) -> tuple[int, Kernel]:
    """How many repairs led to `kernel`, and the kernel the chain started from."""
    depth, current = 0, kernel
    while current.repair_of_id is not None:
        depth += 1
        current = Kernel.objects.only("id", "repair_of_id").get(pk=current.repair_of_id)
    return depth, current


def _start_next_round(search_id: int) -> bool:
    with transaction.atomic():
        search = records.lock_search(search_id)
        if search.status != Search.Status.RUNNING or queue.pending_for_search(search_id).exists():
            return False
        if _has_unimplemented_ideas(search):
            return True  # a user idea arrived since the step looked: go implement it
        finished = search.current_round
        ending = ending_reason(search, finished)
        if ending:
            records.finish(search_id, Search.Status.COMPLETED, ending)
            return True
        parents = choose_parents(search)
        if not parents:
            unjudged = Kernel.objects.filter(search=search, round=finished, status=Verdict.FAILED)
            if unjudged.exists():
                # nothing was wrong with these kernels that anyone knows: the worker could not run them
                # (its device full of other work, a worker that kept dying); resuming runs them again
                records.set_status(search_id, Search.Status.PAUSED,
                                   f"paused after round {finished}: {unjudged.count()} candidate(s) could not be "
                                   f"evaluated ({unjudged.first().reason}). Resume the search to evaluate them "
                                   "again.")
                return True
            reason = f"stopped after round {finished}: no correct kernel to build on"
            if search.sol_stop_percent and at_speed_of_light(search):
                reason = (f"every branch reached {search.sol_stop_percent}% of its speed of light after round "
                          f"{finished}")
            records.finish(search_id, Search.Status.COMPLETED, reason)
            return True
        search.current_round = finished + 1
        search.round_parents = {**(search.round_parents or {}), str(search.current_round): {"parents": parents, "asked": []}}
        search.save(update_fields=["current_round", "round_parents"])
        evidence.request(search, parents)
        events.publish(search_id, "round.started", {"round": search.current_round, "parents": parents})
        events.publish_search_progress(search_id)
    return True


def ending_reason(search: Search, finished: int) -> str:
    """Why the search ends after round `finished`, in its true words; "" to go on."""
    made = Kernel.objects.filter(search=search, origin__in=GENERATED).count()
    planned = search_planned_candidates(search)
    if finished >= 1 and not Idea.objects.filter(search=search, round=finished).exists():
        first = "the forked kernels" if search.forked_from_id else "the starting kernel"
        after = f"round {finished - 1}" if finished > 1 else first
        return f"the proposer had no new ideas after {after} — {made} of {planned} candidates"
    if finished >= search.rounds:
        return f"completed all {search.rounds} rounds"
    if search.stale_rounds and finished >= search.stale_rounds and _stale_for(search, finished) >= search.stale_rounds:
        return f"no improvement in {search.stale_rounds} rounds"
    if search.stop_points_per_dollar and finished >= GAIN_WINDOW:
        rate = points_per_dollar(search, finished, GAIN_WINDOW)
        if rate is not None and rate < search.stop_points_per_dollar:
            return (f"the last {GAIN_WINDOW} rounds bought {rate:.3g} points of speedup per dollar, under the "
                    f"{search.stop_points_per_dollar:g} set")
    return ""


def _stale_for(search: Search, finished: int) -> int:
    """How many rounds up to `finished` in a row beat nothing of the rounds before them."""
    best = {}
    for round_number, median in Kernel.objects.filter(search=search).ranked().values_list("round", "median_ms"):
        best[round_number] = min(median, best.get(round_number, median))
    stale = 0
    for round_number in range(finished, 0, -1):
        before = [m for r, m in best.items() if r < round_number]
        if round_number in best and (not before or best[round_number] < min(before)):
            break
        stale += 1
    return stale


def _has_unimplemented_ideas(search: Search) -> bool:
    for idea in Idea.objects.filter(search=search, round=search.current_round):
        if Kernel.objects.filter(idea=idea, variant__isnull=False).count() < search.kernels_per_idea:
            return True
    return False


def choose_parents(search: Search) -> list[int]:
    """The next round's parents: the B fastest correct kernels so far, plus a bank of up to
    `bank_size` more good ones that were never a parent yet (so earlier promising branches get
    explored too). Quarantined (implausibly fast) kernels are never built on, nor a kernel that
    reached the search's speed-of-light stop (its branch is done)."""
    done = at_speed_of_light(search)
    correct = [kid for kid in
               Kernel.objects.filter(search=search, duplicate_of__isnull=True).ranked()  # a duplicate's twin stands for it
               .order_by("median_ms", "id").values_list("id", flat=True) if kid not in done]
    top = correct[: search.parents_per_round]
    used = {pid for plan in (search.round_parents or {}).values() for pid in plan.get("parents", [])}
    bank = [kid for kid in correct[search.parents_per_round:] if kid not in used][: search.bank_size]
    return top + bank


def at_speed_of_light(search: Search) -> set[int]:
    """The correct kernels at or past `sol_stop_percent` of their floor (none when the stop is off
    or the GPU's ceilings or the problem's work are unknown)."""
    if not search.sol_stop_percent:
        return set()
    rows = Kernel.objects.filter(search=search).ranked().values("id", "status", "device_name", "precision", "median_ms")
    done = set()
    for row in rows:
        sol = speed_of_light(search.problem, row)
        # A floor from an upper-bound FLOP count is too high to stop on.
        if sol and not sol["upper_bound"] and sol["fraction"] * 100 >= search.sol_stop_percent:
            done.add(row["id"])
    return done
