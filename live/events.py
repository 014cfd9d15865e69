"""Live updates: the one place that knows how events are numbered, written and travel.

A stream is one search's events (`SEARCH`), or one problem's (`PROBLEM`: its work outside any search, its
validations and hand-submitted kernels). `append` must run inside the transaction that makes the change
it tells of. It locks the stream's counter row, takes the next number and writes the event, so numbers
follow commit order. After commit the event is pushed to open browsers (`live.fanout`); a browser never
hears of a row the database does not have. A push that fails (Redis down) is logged, never raised: the
write is done and viewers get the event by replay.

Payloads are finished plain dicts: the caller builds them (`searches.services.events`), this module only
numbers, stores and sends them. docs/LIVE_UPDATES.md describes the kinds and payloads for clients.
"""

from django.db import transaction
from django.db.models import Max, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from . import fanout
from .models import ProblemEvent, SearchEvent, StreamCounter, Streams

SEARCH, PROBLEM = Streams.SEARCH.value, Streams.PROBLEM.value
EVENT_MODELS = {SEARCH: (SearchEvent, "search_id"), PROBLEM: (ProblemEvent, "problem_id")}


def publish(search_id: int, kind: str, payload: dict) -> SearchEvent:
    """An event on a search's stream."""
    return append(SEARCH, search_id, kind, payload)


def publish_problem(problem_id: int, kind: str, payload: dict) -> ProblemEvent:
    """An event on a problem's stream (work of no search)."""
    return append(PROBLEM, problem_id, kind, payload)


def append(stream: str, owner_id: int, kind: str, payload: dict):
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events.publish must run inside the transaction that makes the change")
    event_model, field = EVENT_MODELS[stream]
    counters = StreamCounter.objects.select_for_update().filter(stream=stream, owner_id=owner_id)
    counter = counters.first()
    if counter is None:
        # The stream's first event makes its counter row; a writer racing to make it waits on the unique
        # index, then finds it there (PostgreSQL's ON CONFLICT DO NOTHING), and both go on to lock it.
        StreamCounter.objects.bulk_create([StreamCounter(stream=stream, owner_id=owner_id)], ignore_conflicts=True)
        counter = counters.get()
    # Never below what the log holds, whatever wrote the counter.
    logged = event_model.objects.filter(**{field: owner_id}).aggregate(last=Max("seq"))["last"] or 0
    seq = max(counter.last_seq, logged) + 1
    StreamCounter.objects.filter(pk=counter.pk).update(last_seq=seq)
    event = event_model.objects.create(**{field: owner_id}, seq=seq, kind=kind, payload=payload)
    # robust: a failed push (already caught in fanout) must not stop the callbacks after it, e.g. the kick.
    transaction.on_commit(lambda: fanout.broadcast(event), robust=True)
    return event


def last_seq(stream: str, owner_id: int) -> int:
    """The stream's last committed number (0 before its first event)."""
    return last_seqs(stream, [owner_id]).get(owner_id, 0)


def last_seqs(stream: str, owner_ids) -> dict[int, int]:
    """The last committed number of each owner's stream that has one (one query)."""
    return fanout.STREAMS[stream].last_seqs(owner_ids)


def with_last_seq(queryset, stream: str):
    """`queryset` (of the stream's owners: searches or problems) with each row's `last_event_seq`, read in
    the same query: a page reads it before what it draws, so a replay may repeat, never miss."""
    counters = StreamCounter.objects.filter(stream=stream, owner_id=OuterRef("pk")).values("last_seq")[:1]
    return queryset.annotate(last_event_seq=Coalesce(Subquery(counters), Value(0)))


def last_event_times(stream: str, owner_ids) -> dict[int, object]:
    """When each owner's latest event was written (one query: its counter's number, then one index lookup)."""
    event_model, field = EVENT_MODELS[stream]
    last = StreamCounter.objects.filter(stream=stream, owner_id=OuterRef(field)).values("last_seq")[:1]
    rows = event_model.objects.filter(**{f"{field}__in": list(owner_ids)}, seq=Subquery(last))
    return dict(rows.values_list(field, "created_at"))
