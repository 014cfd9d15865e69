"""Fan-out of committed events to websocket consumers (one group per search).

Redis setup: the writing process sends to the channel layer and every web process hears it.
Embedded setup: the writer may be another process (the worker), so each web process runs a
poller that tails SearchEvent by sequence number and fans out in-process.
"""

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings


def group_name(search_id: int) -> str:
    return f"search-{search_id}"


def broadcast(event) -> None:
    if settings.LIVE_UPDATES != "redis":
        return  # the web process's poller picks it up from the table
    layer = get_channel_layer()
    if layer is None:
        return
    from .events import event_message

    async_to_sync(layer.group_send)(group_name(event.search_id), {"type": "search.event", "event": event_message(event)})
