"""Fan-out of committed events to websocket consumers (one group per search).

Redis setup: the writing process sends to the channel layer and every web process hears it.
Embedded setup: the writer may be another process (the worker), so each web process runs a
poller that tails SearchEvent by sequence number and fans out in-process.
"""

import asyncio
import logging

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from searches.models import Search, SearchEvent

log = logging.getLogger(__name__)


def group_name(search_id: int) -> str:
    return f"search-{search_id}"


def broadcast(event) -> None:
    if settings.LIVE_UPDATES != "redis":
        return  # the web process's poller picks it up from the table
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(group_name(event.search_id), {"type": "search.event", "event": event_message(event)})


def event_message(event: SearchEvent) -> dict:
    """The websocket message for one event."""
    return {"seq": event.seq, "kind": event.kind, "payload": event.payload, "at": event.created_at.isoformat()}


# --- embedded mode: one poller per web process ------------------------------------------


class Poller:
    """Tails SearchEvent for the searches someone is watching in this process and sends new
    events to their groups on the (in-memory) channel layer.

    It follows each search by sequence number, not by row id: numbers are given under the
    search row's lock in commit order, so "seq > last seen" never skips a late commit."""

    def __init__(self):
        self.watched: dict[int, int] = {}  # search id -> consumers watching it
        self.last_seq: dict[int, int] = {}
        self.task: asyncio.Task | None = None

    async def watch(self, search_id: int) -> None:
        if search_id not in self.watched:
            # Start after what is committed now: consumers replay older events themselves.
            self.last_seq[search_id] = await database_sync_to_async(_last_seq)(search_id)
        self.watched[search_id] = self.watched.get(search_id, 0) + 1
        self._ensure_running()

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
            self.task = loop.create_task(self._run(), name="kernellab-live-poller")

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
        messages = await database_sync_to_async(_events_after)(wanted)
        for search_id, message in messages:
            if search_id not in self.last_seq or message["seq"] <= self.last_seq[search_id]:
                continue
            self.last_seq[search_id] = message["seq"]
            await layer.group_send(group_name(search_id), {"type": "search.event", "event": message})
        return len(messages)


def _last_seq(search_id: int) -> int:
    return Search.objects.filter(pk=search_id).values_list("last_event_seq", flat=True).first() or 0


def _events_after(wanted: dict[int, int]) -> list[tuple[int, dict]]:
    """New events of the watched searches, oldest first. One cheap query on the search rows
    finds which searches moved; only those are read."""
    moved = [sid for sid, seq in Search.objects.filter(pk__in=list(wanted)).values_list("id", "last_event_seq")
             if seq > wanted[sid]]
    out = []
    for search_id in moved:
        for event in SearchEvent.objects.filter(search_id=search_id, seq__gt=wanted[search_id]).order_by("seq")[:500]:
            out.append((search_id, event_message(event)))
    return out


poller = Poller()


async def subscribe(search_id: int) -> None:
    """Called by each websocket consumer that joins a search's group."""
    if settings.LIVE_UPDATES == "poll":
        await poller.watch(search_id)


def unsubscribe(search_id: int) -> None:
    if settings.LIVE_UPDATES == "poll":
        poller.unwatch(search_id)
