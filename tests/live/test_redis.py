"""Redis mode: the writer's after-commit broadcast goes through channels_redis to the
consumer (no poller), within a second, and nothing is sent for a rolled-back write."""

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connection, transaction

from live import events, fanout
from live.routing import websocket_urlpatterns
from tests.searches import dashboard_data as d

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis]


@pytest.fixture
def redis_mode(require_redis, settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": ["redis://127.0.0.1:6379/3"],
                                                      "prefix": f"kl-test-{time.time_ns()}"}}}
    settings.LIVE_UPDATES = "redis"


def rows():
    return d.user(), d.search(problem=d.problem())


def writer(search_id, committed, count=10):
    try:
        for _ in range(count):
            time.sleep(0.1)
            with transaction.atomic():
                event = events.publish(search_id, "round.started", {"round": 1})
                committed[event.seq] = time.monotonic()  # just before commit: latencies are upper bounds
        try:
            with transaction.atomic():
                events.publish(search_id, "round.started", {"round": 99})
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
    finally:
        connection.close()


async def test_redis_fan_out_within_a_second(redis_mode):
    user, search = await sync_to_async(rows)()
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/searches/{search.code}/?after=0")
    comm.scope["user"] = user
    assert (await comm.connect())[0]
    assert not fanout.poller.watched  # Redis mode has no poller
    committed, received = {}, {}
    thread = threading.Thread(target=writer, args=(search.id, committed))
    thread.start()
    try:
        while len(received) < 10:
            message = await comm.receive_json_from(timeout=3)
            received[message["seq"]] = time.monotonic()
            assert message["payload"]["round"] == 1
    finally:
        await asyncio.to_thread(thread.join)
    assert await comm.receive_nothing(timeout=0.5)  # the rolled-back event never left
    assert max(received[s] - committed[s] for s in committed) < 1.0
    await comm.disconnect()


IDLE_RECEIVE = """
import asyncio
from channels_redis.core import RedisChannelLayer
from django.conf import settings

async def main():
    layer = RedisChannelLayer(**settings.CHANNEL_LAYERS["default"]["CONFIG"])
    crowd = [await layer.new_channel() for _ in range(150)]  # redis-py 8's pools stop at 100 connections
    await asyncio.gather(*(layer.group_add("crowd", name) for name in crowd))
    print("crowd joined")
    channel = await layer.new_channel()
    try:
        await asyncio.wait_for(layer.receive(channel), 7)  # redis-py 8's default read timeout is 5 s
    except asyncio.TimeoutError:
        print("idle receive ok")
    finally:
        await layer.flush()

asyncio.run(main())
"""


@pytest.mark.slow
def test_a_crowd_joins_at_once_and_an_idle_consumer_lives_on(require_redis, tmp_path):
    """The channel layer as REDIS_URL configures it: 150 viewers joining at once all get a connection,
    and a consumer that hears nothing for longer than redis-py's default read timeout keeps waiting
    instead of dying with a TimeoutError."""
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "LIVE_UPDATES"}}
    env.update(REDIS_URL="redis://127.0.0.1:6379/3", KERNELLAB_DATA_DIR=str(tmp_path),
               SQLITE_PATH=str(tmp_path / "db.sqlite3"), DJANGO_SETTINGS_MODULE="kernellab.settings")
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + IDLE_RECEIVE], cwd=root,
                          env=env, capture_output=True, text=True, timeout=60)
    assert "crowd joined\nidle receive ok" in done.stdout, done.stderr[-3000:]
