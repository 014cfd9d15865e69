"""Websocket for a search's live events: /ws/searches/<code>/?after=<seq>; and for a problem's
(its work outside any search, live/events.py): /ws/problems/<code>/?after=<seq>, under the same rules.

On connect it reads the search and every committed event after `after` in one database hop,
joins the search's group, replays what it read (reading again when pushes may have gone out
before it joined: fanout.subscribe), then forwards live ones. It sends each sequence number once and in order:
a live event that arrives ahead of a number not yet sent makes it read the gap from the
database first (numbers follow commit order, so the gap is already committed).
Messages are `fanout.event_message` dicts as JSON; docs/LIVE_UPDATES.md describes them. A live
event is encoded once per process and the same text goes to every consumer of the group.
"""

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from . import fanout
from .fanout import encode, event_message

REPLAY_BATCH = 500
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


def _read(function):
    """A read on the thread pool. Thread-sensitive calls from consumers (channels opens no
    per-connection thread context) all share one thread, so a crowd's connects would queue there
    one behind another, and behind the poller."""
    return database_sync_to_async(function, thread_sensitive=False)


class SearchEventsConsumer(AsyncWebsocketConsumer):
    stream = fanout.SEARCHES
    search_id: int | None = None  # the owner of the stream: the search, or the problem

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.last_sent = _after(self.scope.get("query_string", b""))
        # One query hop: the search, what is committed, and the backlog.
        opened = await _read(_open)(self.scope["url_route"]["kwargs"]["code"], self.last_sent, self.stream)
        if opened is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.search_id, committed, backlog = opened
        self.group = fanout.group_name(self.search_id, self.stream)
        await self.channel_layer.group_add(self.group, self.channel_name)
        # Pushes sent between the read above and the join are read again; later ones queue for us.
        reread = fanout.subscribe(self.search_id, max(committed, backlog[-1][0] if backlog else 0), self.stream)
        await self.accept()
        await self.send_batch(backlog)
        if reread or len(backlog) == REPLAY_BATCH:
            await self.send_backlog()

    async def disconnect(self, code):
        if self.search_id is not None and hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)
            fanout.unsubscribe(self.search_id, self.stream)

    async def receive(self, text_data=None, bytes_data=None):
        """Clients only listen; to resume they reconnect with ?after=<last seq>."""

    async def search_event(self, message):
        """A live event: `text` is its JSON, encoded once for the whole group (fanout.group_message)."""
        seq = message["seq"]
        if seq <= self.last_sent:
            return
        if seq > self.last_sent + 1:
            await self.send_backlog()
            return
        await self.send(text_data=message["text"])
        self.last_sent = seq

    async def send_batch(self, batch):
        for seq, text in batch:
            if seq > self.last_sent:
                await self.send(text_data=text)
                self.last_sent = seq

    async def send_backlog(self):
        while True:
            batch = await _read(_events_after)(self.search_id, self.last_sent, self.stream)
            await self.send_batch(batch)
            if len(batch) < REPLAY_BATCH:
                return


def _after(query_string: bytes) -> int:
    values = parse_qs(query_string.decode("latin-1")).get("after") or ["0"]
    try:
        return max(0, int(values[0]))
    except ValueError:
        return 0


class ProblemEventsConsumer(SearchEventsConsumer):
    stream = fanout.PROBLEMS


def _open(code, after: int, stream=fanout.SEARCHES):
    """(owner id, its last committed seq, events after `after`), or None for an unknown search
    (problem). The seq is read first: events up to it are committed, so the backlog covers at least that far."""
    owner_id = stream.owner.objects.filter(code=code).values_list("id", flat=True).first()
    if owner_id is None:
        return None
    committed = stream.last_seqs([owner_id]).get(owner_id, 0)
    return owner_id, committed, _events_after(owner_id, after, stream)


def _events_after(owner_id: int, seq: int, stream=fanout.SEARCHES) -> list[tuple[int, str]]:
    events = stream.event.objects.filter(**{stream.field: owner_id}, seq__gt=seq).order_by("seq")[:REPLAY_BATCH]
    return [(e.seq, encode(event_message(e))) for e in events]
