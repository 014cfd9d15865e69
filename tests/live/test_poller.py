"""Embedded mode: one poller per web process tails SearchEvent and fans out in-process.
A writer on another thread, with its own database connection, stands in for the worker."""

import asyncio
import json
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connection, transaction

from live import consumers, events, fanout
from live.routing import websocket_urlpatterns
from tests.searches import dashboard_data as d

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def embedded(settings):
    settings.LIVE_UPDATES = "poll"
    settings.LIVE_POLL_SECONDS = 0.2


def setup_rows():
    return d.user(), d.search(problem=d.problem()), d.search(problem=d.problem(name="Other"))


def write_events(search_id: int, count: int, committed: dict, gap: float = 0.12):
    """Like the evaluation worker: each event in its own transaction, on this thread's connection."""
    try:
        for _ in range(count):
            time.sleep(gap)
            with transaction.atomic():
                event = events.publish(search_id, "round.started", {"round": 1})
                committed[event.seq] = time.monotonic()  # just before commit: latencies are upper bounds
    finally:
        connection.close()


async def test_events_from_another_connection_reach_the_browser_within_a_second():
    user, search, _ = await sync_to_async(setup_rows)()
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/searches/{search.code}/?after=0")
    comm.scope["user"] = user
    assert (await comm.connect())[0]
    committed, received = {}, {}
    writer = threading.Thread(target=write_events, args=(search.id, 12, committed))
    writer.start()
    try:
        while len(received) < 12:
            message = await comm.receive_json_from(timeout=3)
            assert message["seq"] not in received, "a duplicate reached the client"
            received[message["seq"]] = time.monotonic()
    finally:
        await asyncio.to_thread(writer.join)
    latencies = sorted(received[seq] - committed[seq] for seq in committed)
    assert list(received) == sorted(received)  # in order
    assert latencies[-1] < 1.0, latencies
    await comm.disconnect()


async def test_one_poller_serves_every_consumer_and_only_watched_searches():
    user, search, other = await sync_to_async(setup_rows)()
    comms = []
    for _ in range(2):
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/searches/{search.code}/")
        comm.scope["user"] = user
        await comm.connect()
        comms.append(comm)
    task = fanout.poller.task
    assert task is not None and not task.done()
    assert fanout.poller.watched[search.id] == 2 and other.id not in fanout.poller.watched
    await asyncio.to_thread(write_events, other.id, 1, {}, 0)
    await asyncio.to_thread(write_events, search.id, 1, {}, 0)
    for comm in comms:
        assert (await comm.receive_json_from(timeout=1.5))["seq"] == 1
        assert await comm.receive_nothing(timeout=0.5)  # nothing from the other search
    assert fanout.poller.task is task  # started once, lazily, and shared
    for comm in comms:
        await comm.disconnect()
    assert search.id not in fanout.poller.watched
    await asyncio.sleep(0.5)
    assert fanout.poller.task.done()  # it stops when nobody watches


async def test_poller_starts_after_what_is_already_committed():
    """Older events are the consumers' replay to send; the poller only fans out new ones."""
    user, search, _ = await sync_to_async(setup_rows)()
    await asyncio.to_thread(write_events, search.id, 3, {}, 0)
    comm = viewer(search, user, after=3)
    assert (await comm.connect())[0]
    assert fanout.poller.last_seq[search.id] == 3
    await comm.disconnect()


def viewer(search, user, after=0):
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/searches/{search.code}/?after={after}")
    comm.scope["user"] = user
    return comm


async def test_one_event_is_encoded_once_for_a_crowd_and_every_viewer_gets_the_same_text(monkeypatch):
    """Two hundred viewers of one search cost one JSON encoding per event, not two hundred."""
    user, search, _ = await sync_to_async(setup_rows)()
    crowd = [viewer(search, user) for _ in range(40)]
    for comm in crowd:
        assert (await comm.connect())[0]
    encoded = []
    real_encode = fanout.encode
    monkeypatch.setattr(fanout, "encode", lambda message: encoded.append(message["seq"]) or real_encode(message))
    await asyncio.to_thread(write_events, search.id, 2, {}, 0)
    texts = [[await comm.receive_from(timeout=3), await comm.receive_from(timeout=3)] for comm in crowd]
    assert sorted(encoded) == [1, 2]  # once per event, for the whole group
    assert all(t == texts[0] for t in texts)
    assert [json.loads(t)["seq"] for t in texts[0]] == [1, 2]
    for comm in crowd:
        await comm.disconnect()


async def test_a_connect_reads_the_database_once(monkeypatch):
    """The search, what is committed and the backlog come in one hop; no second read unless the
    poller moved past what the connect read."""
    user, search, _ = await sync_to_async(setup_rows)()
    await asyncio.to_thread(write_events, search.id, 3, {}, 0)
    hops = []
    real = consumers.database_sync_to_async  # every trip of a consumer to a database thread, counted
    monkeypatch.setattr(consumers, "database_sync_to_async",
                        lambda function, *a, **k: hops.append(function.__name__) or real(function, *a, **k))
    crowd = [viewer(search, user, after=1) for _ in range(10)]
    for comm in crowd:
        assert (await comm.connect())[0]
        assert [json.loads(await comm.receive_from(timeout=2))["seq"] for _ in range(2)] == [2, 3]
    assert hops == ["_open"] * 10  # one per connect (the poller's own reads are not counted)
    for comm in crowd:
        await comm.disconnect()


async def test_a_viewer_that_joins_behind_the_poller_reads_again():
    """Events the poller pushed between a connect's read and its join are read from the database."""
    user, search, _ = await sync_to_async(setup_rows)()
    first = viewer(search, user)
    assert (await first.connect())[0]
    assert not fanout.subscribe(search.id, 0)  # the poller is where this read was: nothing to read again
    await asyncio.to_thread(write_events, search.id, 1, {}, 0)
    assert json.loads(await first.receive_from(timeout=2))["seq"] == 1  # the poller is now at 1
    assert fanout.subscribe(search.id, 0)  # a read that saw nothing must read again
    fanout.unsubscribe(search.id)
    fanout.unsubscribe(search.id)
    await first.disconnect()
