"""The search websocket: login required, replay after a sequence number, then live, in order
and without duplicates."""

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from live import events, fanout
from live.routing import websocket_urlpatterns
from tests.searches import dashboard_data as d

pytestmark = [pytest.mark.django_db(transaction=True)]


def make_search_with_events(n: int):
    user = d.user()
    search = d.search(problem=d.problem())
    for i in range(n):
        with transaction.atomic():
            events.publish(search.id, "round.started", {"round": i + 1})
    return user, search


def publish(search_id, kind="round.started", payload=None):
    with transaction.atomic():
        return events.publish(search_id, kind, payload or {"round": 9})


def communicator(search, user, after=None):
    path = f"/ws/searches/{search.code}/" + (f"?after={after}" if after is not None else "")
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


async def receive_all(comm, timeout=1.0):
    out = []
    while not await comm.receive_nothing(timeout=timeout if not out else 0.2):
        out.append(await comm.receive_json_from())
    return out


async def test_refuses_anonymous_users():
    _, search = await sync_to_async(make_search_with_events)(1)
    comm = communicator(search, AnonymousUser())
    connected, code = await comm.connect()
    assert not connected and code == 4401


async def test_refuses_unknown_searches():
    user, search = await sync_to_async(make_search_with_events)(0)
    search.code = "7b7c6f36-2d39-4a57-9e33-58a0e35c2b0a"
    comm = communicator(search, user)
    connected, code = await comm.connect()
    assert not connected and code == 4404


async def test_replays_everything_after_the_given_seq_in_order():
    user, search = await sync_to_async(make_search_with_events)(5)
    comm = communicator(search, user, after=2)
    connected, _ = await comm.connect()
    assert connected
    messages = await receive_all(comm)
    assert [m["seq"] for m in messages] == [3, 4, 5]
    assert messages[0] == {"seq": 3, "kind": "round.started", "payload": {"round": 3}, "at": messages[0]["at"]}
    await comm.disconnect()


async def test_without_after_it_replays_from_the_start_and_bad_values_mean_zero():
    user, search = await sync_to_async(make_search_with_events)(2)
    for after in (None, "abc", "-5"):
        comm = communicator(search, user, after=after)
        await comm.connect()
        assert [m["seq"] for m in await receive_all(comm)] == [1, 2]
        await comm.disconnect()


async def test_live_events_follow_the_replay_and_arrive_within_a_second():
    user, search = await sync_to_async(make_search_with_events)(2)
    comm = communicator(search, user, after=0)
    await comm.connect()
    assert [m["seq"] for m in await receive_all(comm, timeout=0.5)] == [1, 2]
    await sync_to_async(publish)(search.id)
    message = await comm.receive_json_from(timeout=1.0)
    assert message["seq"] == 3
    await comm.disconnect()


async def test_fills_a_gap_from_the_database_and_drops_duplicates():
    """A live message can overtake an earlier one on its way (two writers' after-commit sends);
    the consumer then reads the missing numbers from the database first."""
    user, search = await sync_to_async(make_search_with_events)(1)
    comm = communicator(search, user, after=0)
    await comm.connect()
    assert [m["seq"] for m in await receive_all(comm, timeout=0.5)] == [1]
    fanout.unsubscribe(search.id)  # keep the poller out of it: this test drives the group by hand
    second = await sync_to_async(publish)(search.id, payload={"round": 2})
    third = await sync_to_async(publish)(search.id, payload={"round": 3})
    layer = get_channel_layer()
    group = fanout.group_name(search.id)
    await layer.group_send(group, fanout.group_message(fanout.event_message(third)))
    assert [m["seq"] for m in await receive_all(comm, timeout=0.5)] == [2, 3]
    for old in (second, third):  # duplicates of what it sent
        await layer.group_send(group, fanout.group_message(fanout.event_message(old)))
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_through_the_real_asgi_stack_with_a_session_cookie(client):
    from kernellab.asgi import application

    user, search = await sync_to_async(make_search_with_events)(1)
    await sync_to_async(client.force_login)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    comm = WebsocketCommunicator(application, f"/ws/searches/{search.code}/?after=0", headers=[(b"cookie", cookie)])
    connected, _ = await comm.connect()
    assert connected
    assert (await comm.receive_json_from(timeout=1.0))["seq"] == 1
    await comm.disconnect()
    anonymous = WebsocketCommunicator(application, f"/ws/searches/{search.code}/")
    connected, _ = await anonymous.connect()
    assert not connected
