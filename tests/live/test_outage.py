"""Fault injection: Redis (channel layer and task broker) stopped while a search runs.

Each test starts a redis-server of its own, points the channel layer (channels_redis) and the
task broker (django-q2) at it, as REDIS_URL does in a deployment, and kills it mid-work. A push
or a kick that fails after commit must not fail the search, the verdict or the web request; once
Redis is back the scheduled re-kick advances the search and a viewer gets every event by replay.
Real database, real engine (offline playbook proposer, CPU problem), real channels_redis layer.
"""

import time

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.urls import reverse
from django_q.brokers import get_broker
from django_q.conf import Conf
from django_q.signing import SignedPackage

from evaluation import leases
from live import events, fanout
from live.models import SearchEvent
from live.routing import websocket_urlpatterns
from searches import services, tasks
from searches.catalog import get as catalog_get
from searches.engine import loop
from searches.models import BenchmarkRun, Kernel, Search
from tests.live.redis_server import RedisServer
from tests.searches import dashboard_data as d

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis, pytest.mark.slow]

KNOBS = dict(proposer="playbook", device="cpu", rounds=1, parents_per_round=1, ideas_per_parent=1,
             kernels_per_idea=2, bank_size=0)


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_mode(redis_server, settings, monkeypatch):
    """What REDIS_URL sets up: the channel layer and the task broker on this Redis."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                           "CONFIG": {"hosts": [redis_server.url], "prefix": f"kl-{time.time_ns()}"}}}
    settings.LIVE_UPDATES = "redis"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": redis_server.url, "KEY_PREFIX": f"kl-{time.time_ns()}"}}
    monkeypatch.setattr(Conf, "ORM", None)  # django-q2 reads its broker from Conf at each call
    monkeypatch.setattr(Conf, "REDIS", redis_server.url)
    return redis_server


@pytest.fixture
def problem():
    entry = catalog_get("softmax-cpu")
    problem = services.problem_create(user=None, name=entry.name, source=entry.source, device="cpu",
                                      catalog_key=entry.key, family=entry.family)
    services.problem_record_validation(problem=problem, job=problem.jobs.get(), result={
        "schema": 1, "status": "ok", "reason": "", "outputs": [{"shape": [128, 4096], "dtype": "float32"}],
        "family": "softmax", "flops": 1.0, "min_bytes": 1.0,
        "baseline": {"eager_ms": 2.0, "compile_ms": 1.5, "compile_mode": "default"}, "environment": {},
    })
    problem.refresh_from_db()
    return problem


def verdict(median_ms=1.0):
    return {
        "schema": 1, "status": "correct", "reason": "", "quarantined": False, "quarantine_reason": "", "seed": 11,
        "precision": "fp32", "compile": {"seconds": 0.1, "log": ""},
        "correctness": {"atol": 1e-4, "rtol": 1e-4, "passed": True, "per_distribution": []},
        "timing": {"median_ms": median_ms, "n": 10},
        "baseline": {"eager_ms": 2.0, "compile_ms": 1.5, "compile_mode": "default"},
        "speedup_vs_eager": 2.0 / median_ms, "speedup_vs_compile": 1.5 / median_ms,
        "environment": {"device_name": "test-cpu", "torch": "2.13", "runner_version": "t"},
    }


def evaluate_queued() -> int:
    """Give every queued search job a verdict, as an evaluator would."""
    done = 0
    while (job := leases.claim("outage-worker", "cpu")) is not None:
        services.kernel_record_verdict(kernel=job.kernel, job=job, result=verdict())
        done += 1
    return done


def queued_advances() -> list[str]:
    """Names of the advance tasks waiting in the Redis broker."""
    broker = get_broker()
    names = []
    while (packed := broker.dequeue()):
        names.append(SignedPackage.loads(packed[0][1])["name"])
    return names


def replay(user, search, after: int) -> list[dict]:
    """What a viewer reconnecting with ?after=<its last seq> is sent."""
    async def run():
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/searches/{search.code}/?after={after}")
        comm.scope["user"] = user
        assert (await comm.connect())[0]
        got = []
        while not await comm.receive_nothing(timeout=0.5):
            got.append(await comm.receive_json_from())
        await comm.disconnect()
        return got
    return async_to_sync(run)()


def test_an_engine_step_during_an_outage_does_not_fail_the_search(redis_mode, problem, caplog):
    search = services.search_start(problem=problem, user=None, **KNOBS)
    assert [n for n in queued_advances() if n.startswith(f"advance-search-{search.id}-")]  # Redis up: kicked
    seen = events.last_seq(events.SEARCH, search.pk)
    failed_before = fanout.push_failures.total

    redis_mode.stop()
    loop.advance(search.id)  # starts the search and writes its starting kernel: pushes and kicks fail
    search.refresh_from_db()
    assert (search.status, search.stop_reason) == ("running", "")
    assert Kernel.objects.filter(search=search).count() == 1
    assert fanout.push_failures.total - failed_before == events.last_seq(events.SEARCH, search.pk) - seen > 0
    assert "ConnectionError" in caplog.text  # the real error is logged
    assert evaluate_queued() == 1  # a verdict while Redis is down: its pushes and kick fail, not raise
    assert f"could not queue the next step of search {search.id}" in caplog.text  # the kick ran after them

    redis_mode.start()
    assert tasks.rekick_stalled_searches() == 1  # the scheduled re-kick queues the step that was lost
    assert [n for n in queued_advances() if n.startswith(f"advance-search-{search.id}-")]
    for _ in range(5):
        loop.advance(search.id)
        search.refresh_from_db()
        if search.status != "running":
            break
        evaluate_queued()
    assert (search.status, search.stop_reason) == ("completed", "completed all 1 rounds")
    assert search.candidates_evaluated == 3  # the starting kernel and the round's two
    assert fanout.push_failures.streak == 0  # pushes go through again

    # A viewer that saw `seen` before the outage gets every later event, once and in order.
    user = d.user()
    got = [m["seq"] for m in replay(user, search, after=seen)]
    assert got == list(range(seen + 1, events.last_seq(events.SEARCH, search.pk) + 1))


def test_a_verdict_recorded_during_an_outage_is_stored(redis_mode, problem):
    search = services.search_start(problem=problem, user=None, **KNOBS)
    loop.advance(search.id)
    job = leases.claim("outage-worker", "cpu")
    redis_mode.stop()
    run = services.kernel_record_verdict(kernel=job.kernel, job=job, result=verdict(median_ms=0.5))
    assert BenchmarkRun.objects.get(job=job).pk == run.pk
    kernel = Kernel.objects.get(pk=job.kernel_id)
    assert (kernel.status, kernel.median_ms) == ("correct", 0.5)
    assert SearchEvent.objects.filter(search=search, kind="kernel.updated", payload__id=kernel.id).exists()
    search.refresh_from_db()
    assert search.status == "running" and search.candidates_evaluated == 1


def test_starting_a_search_during_an_outage_redirects_to_it(redis_mode, problem, client):
    user = d.user()
    client.raise_request_exception = False  # a 500 is what a browser would see
    redis_mode.stop()
    # The rate limits live in the Redis cache: they fail open, so logging in and starting work still answer.
    response = client.post(reverse("login"), {"username": user.username, "password": "pw-for-tests-only"})
    assert response.status_code == 302
    response = client.post(reverse("search_new", args=[problem.code]), {
        "proposer": "playbook", "device": "cpu", "rounds": 1, "parents_per_round": 1, "ideas_per_parent": 1,
        "kernels_per_idea": 1, "bank_size": 0})
    [search] = Search.objects.filter(problem=problem)
    assert response.status_code == 302
    assert response["Location"] == reverse("search_detail", args=[search.code])
    assert search.status == "queued" and search.created_by == user
    assert client.get(response["Location"]).status_code == 200
    assert tasks.rekick_stalled_searches() == 0  # the broker still refuses: logged, not raised

    redis_mode.start()
    assert tasks.rekick_stalled_searches() == 1  # its first step, refused while Redis was down
    assert [n for n in queued_advances() if n.startswith(f"advance-search-{search.id}-")]
