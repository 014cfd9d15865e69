"""Websocket for a search's live events: /ws/searches/<code>/?after=<seq>.

On connect it joins the search's group, then replays every committed event after `after`
from the database, then forwards live ones. It sends each sequence number once and in order:
a live event that arrives ahead of a number not yet sent makes it read the gap from the
database first (numbers follow commit order, so the gap is already committed).
Messages are `fanout.event_message` dicts; docs/LIVE_UPDATES.md describes them.
"""

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from searches.models import Search, SearchEvent

from . import fanout
from .fanout import event_message

REPLAY_BATCH = 500
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


class SearchEventsConsumer(AsyncJsonWebsocketConsumer):
    search_id: int | None = None

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.search_id = await database_sync_to_async(_search_id)(self.scope["url_route"]["kwargs"]["code"])
        if self.search_id is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.last_sent = _after(self.scope.get("query_string", b""))
        self.group = fanout.group_name(self.search_id)
        # Join before reading the backlog, so nothing committed in between is lost.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await fanout.subscribe(self.search_id)
        await self.accept()
        await self.send_backlog()

    async def disconnect(self, code):
        if self.search_id is not None and hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)
            fanout.unsubscribe(self.search_id)

    async def receive_json(self, content, **kwargs):
        """Clients only listen; to resume they reconnect with ?after=<last seq>."""

    async def search_event(self, message):
        event = message["event"]
        seq = event["seq"]
        if seq <= self.last_sent:
            return
        if seq > self.last_sent + 1:
            await self.send_backlog()
            return
        await self.send_json(event)
        self.last_sent = seq

    async def send_backlog(self):
        while True:
            batch = await database_sync_to_async(_events_after)(self.search_id, self.last_sent)
            for message in batch:
                await self.send_json(message)
                self.last_sent = message["seq"]
            if len(batch) < REPLAY_BATCH:
                return


def _after(query_string: bytes) -> int:
    values = parse_qs(query_string.decode("latin-1")).get("after") or ["0"]
    try:
        return max(0, int(values[0]))
    except ValueError:
        return 0


def _search_id(code) -> int | None:
    return Search.objects.filter(code=code).values_list("id", flat=True).first()


def _events_after(search_id: int, seq: int) -> list[dict]:
    events = SearchEvent.objects.filter(search_id=search_id, seq__gt=seq).order_by("seq")[:REPLAY_BATCH]
    return [event_message(e) for e in events]
