"""A search's proposer calls in flight together (searches/engine/calls.py), through the real
`anthropic` client against the local fake Messages API: never more than SEARCH_PARALLEL_CALLS at
once, the round's first ideas call alone until its reply begins (its prompt cached), a rate limit pausing every caller of
the key (searches/engine/gate.py), budgets held with calls in flight, a cancel abandoning them."""

import threading
import time

import pytest

from proposers.base import ProposerError
from searches.engine import gate, loop
from searches.models import Idea, Kernel, ProposerCall, Search
from tests.fakes.anthropic_server import Behaviour

from .test_engine import problem  # noqa: F401  (fixture)
from .test_engine_llm import fake, judge, kicks, start  # noqa: F401  (fixtures)

# serial: how many calls overlap depends on the fake API's delays beating the host's load
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.serial]


def overlapping(spans, span) -> list:
    return [s for s in spans if s is not span and s[0] < span[1] and span[0] < s[1]]


def test_a_round_fans_out_to_the_width_and_never_past_it(problem, fake, settings):
    settings.SEARCH_PARALLEL_CALLS = 5
    fake.latency = lambda seen: 0.3
    search = start(problem, ideas_per_parent=3, kernels_per_idea=4, repair_attempts=0)
    loop.advance(search.id)  # the starting kernel
    judge()
    began = time.monotonic()
    loop.advance(search.id)  # round 1: one ideas call, then 12 kernel calls
    elapsed = time.monotonic() - began
    assert Kernel.objects.filter(search=search, round=1).count() == 12
    assert fake.max_in_flight == 5
    # 1 ideas call + 12 kernel calls of 0.3 s, 5 at a time: about 4 x 0.3 s, not 13 x 0.3 s
    assert elapsed < 0.3 * 9, elapsed


def test_the_rounds_first_ideas_call_goes_alone_until_its_reply_begins_then_the_rest_fan_out(problem, fake, settings):
    settings.SEARCH_PARALLEL_CALLS = 8
    fake.latency = lambda seen: 0.2
    search = start(problem, rounds=2, parents_per_round=3, ideas_per_parent=1, kernels_per_idea=3, repair_attempts=0)
    loop.advance(search.id)
    judge()
    loop.advance(search.id)  # round 1: three kernels, which become round 2's three parents
    judge(median_for=lambda kernel: 1.0 / kernel.id)
    fake.spans.clear()
    fake.latency, fake.first_token_s = (lambda seen: 2.0), 0.3
    loop.advance(search.id)
    ideas = sorted(s for s in fake.spans if s[2] == "ideas")
    assert len(ideas) == 3
    first = ideas[0]
    # Nothing went before the API began the first reply (its prompt read and cached), and the other
    # parents' ideas did not wait for the rest of it.
    others = [s for s in fake.spans if s is not first]
    assert all(s[0] >= first[4] for s in others)
    assert len([s for s in others if s[2] == "ideas" and s[0] < first[1]]) == 2
    calls = ProposerCall.objects.filter(search=search, purpose="ideas").order_by("id")
    assert calls[0].cache_write_tokens > 0
    assert calls[1].cache_read_tokens > 0 and calls[2].cache_read_tokens > 0


def test_a_rate_limit_pauses_every_caller_of_the_key(problem, fake, settings):
    settings.SEARCH_PARALLEL_CALLS = 4
    fake.latency = lambda seen: 0.2
    search = start(problem, ideas_per_parent=2, kernels_per_idea=4, repair_attempts=0)
    loop.advance(search.id)
    judge()
    fake.spans.clear()
    fake.script = [Behaviour(), Behaviour(status=429, retry_after=1.5)]  # the ideas call, then the first kernel's
    loop.advance(search.id)
    assert Kernel.objects.filter(search=search, round=1).count() == 8
    limited = next(s for s in fake.spans if s[3] == 429)
    # Nobody sent during the pause, once the caller that got the 429 had recorded it (a few ms after the answer).
    during = [s for s in fake.spans if limited[1] + 0.3 < s[0] < limited[1] + 1.4]
    assert during == [] and any(s[0] >= limited[1] + 1.4 for s in fake.spans)


def test_the_keys_places_are_shared_by_separate_gates(settings, monkeypatch):
    """Two gates of one key (two processes) hold at most its places between them."""
    settings.ANTHROPIC_KEY_PARALLEL_CALLS = 2
    gates = [gate.DatabaseGate("sk-ant-shared"), gate.DatabaseGate("sk-ant-shared")]
    other = gate.DatabaseGate("sk-ant-another")
    inside, most, lock = [0], [0], threading.Lock()

    def hold(g):
        with g.slot():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.2)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=hold, args=(gates[i % 2],)) for i in range(6)]
    for thread in threads:
        thread.start()
    with other.slot():  # another key is not held up by this one's
        pass
    for thread in threads:
        thread.join()
    assert most[0] == 2


def test_a_caller_waiting_for_a_place_gives_up_once_stopped_and_takes_none(settings):
    settings.ANTHROPIC_KEY_PARALLEL_CALLS = 1
    held, waiter = gate.DatabaseGate("sk-ant-busy"), gate.DatabaseGate("sk-ant-busy")
    stop, outcome = threading.Event(), []

    def wait_for_a_place():
        try:
            with waiter.slot(stop.is_set):
                outcome.append("took a place")
        except ProposerError as exc:
            outcome.append(str(exc))

    with held.slot():
        thread = threading.Thread(target=wait_for_a_place)
        thread.start()
        time.sleep(0.5)
        stop.set()
        thread.join(timeout=5)
        assert outcome == ["the call was abandoned: its search stopped"]


def test_a_budget_reached_with_calls_in_flight_stops_within_the_reserve(problem, fake, settings):
    settings.SEARCH_PARALLEL_CALLS = 8
    fake.latency = lambda seen: 0.1
    search = start(problem, ideas_per_parent=3, kernels_per_idea=4, repair_attempts=0, max_candidates=5)
    loop.advance(search.id)
    judge()
    loop.advance(search.id)
    assert Kernel.objects.filter(search=search).count() == 5  # the seed and four: never a sixth in flight
    assert len([r for r in fake.requests if "TASK: kernel." in r.user_text]) == 4


def test_cancelling_abandons_the_calls_in_flight(problem, fake, settings):
    settings.SEARCH_PARALLEL_CALLS = 4
    search = start(problem, ideas_per_parent=2, kernels_per_idea=2, repair_attempts=0)
    loop.advance(search.id)
    judge()
    fake.latency = lambda seen: 30.0 if "TASK: kernel." in seen.user_text else 0.0

    def cancel_soon():
        time.sleep(1.0)
        Search.objects.filter(pk=search.id).update(status=Search.Status.CANCELLED)

    threading.Thread(target=cancel_soon).start()
    began = time.monotonic()
    loop.advance(search.id)
    assert time.monotonic() - began < 10
    assert Kernel.objects.filter(search=search, round=1).count() == 0
    abandoned = ProposerCall.objects.filter(search=search, purpose="kernel", ok=False)
    assert abandoned.count() == 4 and "abandoned" in abandoned.first().error
    assert Idea.objects.filter(search=search, round=1).count() == 2


def test_calls_waiting_on_a_paused_key_end_when_their_search_is_cancelled(problem, fake, settings):
    """A call waiting for the key (a retry-after pause) when its search stops ends with it, instead of
    polling the database until the pause is over and then taking a place from the key's live callers."""
    settings.SEARCH_PARALLEL_CALLS = 4
    search = start(problem, ideas_per_parent=2, kernels_per_idea=2, repair_attempts=0)
    loop.advance(search.id)
    judge()
    gate.for_environment().pause(120)
    threading.Timer(1.0, lambda: Search.objects.filter(pk=search.id).update(status=Search.Status.CANCELLED)).start()
    loop.advance(search.id)

    def call_threads():
        return [t for t in threading.enumerate() if t.name.startswith(f"search-{search.id}")]

    deadline = time.monotonic() + 5
    while call_threads() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert call_threads() == []
    assert ProposerCall.objects.filter(search=search, purpose="ideas", ok=False).count() == 1
    assert len(fake.requests) == 1  # the starting kernel's; nothing was sent for the cancelled round


def test_a_steps_own_model_sends_its_first_call_of_the_round_alone(problem, fake, settings):
    """Caches are per model: kernels on a model the ideas call did not use write their cache once."""
    settings.SEARCH_PARALLEL_CALLS = 8
    fake.latency = lambda seen: 0.2
    search = start(problem, ideas_per_parent=2, kernels_per_idea=2, repair_attempts=0, kernel_model="claude-haiku-4-5")
    loop.advance(search.id)
    judge()
    fake.spans.clear()
    fake.latency, fake.first_token_s = (lambda seen: 1.0), 0.2
    loop.advance(search.id)  # round 1: the ideas call, one kernel call alone until its reply begins, then three
    kernels = sorted(s for s in fake.spans if s[2] == "kernel")
    assert len(kernels) == 4 and all(s[0] >= kernels[0][4] for s in kernels[1:])
    assert len(overlapping(fake.spans, kernels[1])) == 3  # the fan-out, beside the first's reply
    calls = list(ProposerCall.objects.filter(search=search, kernels__round=1).order_by("id"))
    assert {c.model for c in calls} == {"claude-haiku-4-5"} and calls[0].cache_write_tokens > 0
    assert all(c.cache_read_tokens > 0 and c.cache_write_tokens == 0 for c in calls[1:])  # read what the first wrote
