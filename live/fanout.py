"""Fan-out of committed events to websocket consumers (one group per search, one per problem).

Redis setup: the writing process sends to the channel layer and every web process hears it.
Embedded setup: the writer may be another process (the worker), so each web process runs a
poller that tails the event tables by sequence number and fans out in-process.

A push is a courtesy: the event is already committed, and a viewer gets any push it missed by
replay (on reconnect) or gap filling (on the next push it hears); see live.consumers. So a
channel layer that is down (Redis outage) never fails the writer: `broadcast` logs and counts.
"""

import asyncio
import json
import logging
import threading

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from .models import ProblemEvent, SearchEvent, StreamCounter, Streams

log = logging.getLogger(__name__)


class Stream:
    """One kind of event log: its events, the field naming the owner (a search, or a problem for its work
    outside any search), the owners' last numbers (StreamCounter rows of this `name`)."""

    def __init__(self, name: str, event, field: str):
        self.name, self.event, self.field = name, event, field

    @property
    def owner(self):
        """The owner's model (searches.Search or searches.Problem), reached through the foreign key that
        names it by string: live imports nothing of searches."""
        return self.event._meta.get_field(self.field.removesuffix("_id")).related_model

    def owner_of(self, event) -> int:
        return getattr(event, self.field)

    def last_seqs(self, owner_ids) -> dict[int, int]:
        """The last committed number of each owner's stream that has one."""
        return dict(StreamCounter.objects.filter(stream=self.name, owner_id__in=list(owner_ids))
                    .values_list("owner_id", "last_seq"))


SEARCHES = Stream(Streams.SEARCH.value, SearchEvent, "search_id")
PROBLEMS = Stream(Streams.PROBLEM.value, ProblemEvent, "problem_id")
STREAMS = {SEARCHES.name: SEARCHES, PROBLEMS.name: PROBLEMS}


def stream_of(event) -> Stream:
    return PROBLEMS if isinstance(event, ProblemEvent) else SEARCHES


def group_name(owner_id: int, stream: Stream = SEARCHES) -> str:
    return f"{stream.name}-{owner_id}"


class PushFailures:
    """Pushes this process could not hand to the channel layer: `total` since start, `streak`
    since the last one that went through. The first failure of a streak is logged with its error,
    and the recovery with the streak's length, so an outage gives two log lines, not one per event."""

    def __init__(self):
        self.total = 0
        self.streak = 0
        self._lock = threading.Lock()  # evaluators record verdicts from several threads

    def failed(self, event, exc: Exception) -> None:
        with self._lock:
            self.total += 1
            self.streak += 1
            first = self.streak == 1
        if first:
            log.warning("live push of %s %s event %s failed (%s: %s); viewers get it by replay once the "
                        "channel layer is back", stream_of(event).name, stream_of(event).owner_of(event), event.seq,
                        type(exc).__name__, exc)
        else:
            log.debug("live push of %s event %s failed: %s", stream_of(event).name, event.seq, exc)

    def succeeded(self) -> None:
        with self._lock:
            missed, self.streak = self.streak, 0
        if missed:
            log.warning("live pushes go through again, after %d failed", missed)


push_failures = PushFailures()


def broadcast(event) -> None:
    """Push one committed event to its search's (or problem's) group. Never raises: the caller's write is done."""
    if settings.LIVE_UPDATES != "redis":
        return  # the web process's poller picks it up from the table
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        stream = stream_of(event)
        async_to_sync(layer.group_send)(group_name(stream.owner_of(event), stream), group_message(event_message(event)))
    except Exception as exc:  # Redis down or restarting: replay and gap filling deliver it later
        push_failures.failed(event, exc)
    else:
        push_failures.succeeded()


def event_message(event) -> dict:
    """The websocket message for one event."""
    return {"seq": event.seq, "kind": event.kind, "payload": event.payload, "at": event.created_at.isoformat()}


def encode(message: dict) -> str:
    return json.dumps(message, separators=(",", ":"))


def group_message(message: dict) -> dict:
    """What travels on the channel layer: the event's JSON encoded once, here, and sent as the same
    text by every consumer of the group. A string also keeps the in-memory layer's per-consumer
    deepcopy, and channels_redis's per-consumer msgpack, cheap: 200 viewers, one encoding."""
    return {"type": "search.event", "seq": message["seq"], "text": encode(message)}


# --- embedded mode: one poller per web process ------------------------------------------


class Poller:
    """Tails one stream's events (SearchEvent, or ProblemEvent) for the searches (problems) someone
    is watching in this process and sends new events to their groups on the (in-memory) channel layer.

    It follows each search by sequence number, not by row id: numbers are given under the
    search row's lock in commit order, so "seq > last seen" never skips a late commit."""

    def __init__(self, stream: Stream = SEARCHES):
        self.stream = stream
        self.watched: dict[int, int] = {}  # search id -> consumers watching it
        self.last_seq: dict[int, int] = {}
        self.task: asyncio.Task | None = None

    def watch(self, search_id: int, committed: int) -> int:
        """A consumer joined `search_id`'s group, having read its events up to `committed` (what was
        committed then). Returns where the poller stands for that search: events after it are yet to
        be sent to the group; those up to it may have gone out before the consumer joined. No query."""
        if search_id not in self.watched:
            self.last_seq[search_id] = committed  # consumers replay older events themselves
        self.watched[search_id] = self.watched.get(search_id, 0) + 1
        self._ensure_running()
        return self.last_seq[search_id]

    def unwatch(self, search_id: int) -> None:
        count = self.watched.get(search_id, 0) - 1
        if count > 0:
            self.watched[search_id] = count
        else:
            self.watched.pop(search_id, None)
            self.last_seq.pop(search_id, None)

    def _ensure_running(self) -> None:
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.done() or self.task.get_loop() is not loop:
            self.task = loop.create_task(self._run(), name=f"kernellab-live-poller-{self.stream.name}")

    async def _run(self) -> None:
        layer = get_channel_layer()
        while self.watched:
            try:
                await self.poll_once(layer)
            except asyncio.CancelledError:
                raise
            except Exception:  # a locked or restarting database must not kill live updates
                log.exception("live poller: reading new events failed; retrying")
            await asyncio.sleep(settings.LIVE_POLL_SECONDS)

    async def poll_once(self, layer) -> int:
        wanted = dict(self.last_seq)
        if not wanted:
            return 0
        # Not thread-sensitive: the poll must not queue behind the consumers' reads on the one
        # thread that thread-sensitive calls outside a request share.
        messages = await database_sync_to_async(_events_after, thread_sensitive=False)(wanted, self.stream)
        for search_id, message in messages:
            if search_id not in self.last_seq or message["seq"] <= self.last_seq[search_id]:
                continue
            self.last_seq[search_id] = message["seq"]
            await layer.group_send(group_name(search_id, self.stream), group_message(message))
        return len(messages)


def _events_after(wanted: dict[int, int], stream: Stream = SEARCHES) -> list[tuple[int, dict]]:
    """New events of the watched searches (problems), oldest first. One cheap query on the owner
    rows finds which moved; only those are read."""
    moved = [oid for oid, seq in stream.last_seqs(wanted).items() if seq > wanted[oid]]
    out = []
    for owner_id in moved:
        events = stream.event.objects.filter(**{stream.field: owner_id}, seq__gt=wanted[owner_id]).order_by("seq")
        out.extend((owner_id, event_message(event)) for event in events[:500])
    return out


poller = Poller(SEARCHES)
problem_poller = Poller(PROBLEMS)
POLLERS = {SEARCHES.name: poller, PROBLEMS.name: problem_poller}


def subscribe(search_id: int, committed: int, stream: Stream = SEARCHES) -> bool:
    """Called by each websocket consumer once it joined a search's group, having read the events
    committed up to `committed`. True when pushes it did not hear may have gone out before it
    joined, so it must read the backlog again: always with Redis (a writer pushes at any time),
    in embedded mode only when this process's poller is already past `committed`."""
    if settings.LIVE_UPDATES == "poll":
        return POLLERS[stream.name].watch(search_id, committed) > committed
    return True


def unsubscribe(search_id: int, stream: Stream = SEARCHES) -> None:
    if settings.LIVE_UPDATES == "poll":
        POLLERS[stream.name].unwatch(search_id)
