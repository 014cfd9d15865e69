"""The distributed setup: PostgreSQL for data, Redis for the task queue and live updates.

Each test runs KernelLab in subprocesses configured only through the environment
(DATABASE_URL, REDIS_URL), exactly as a deployment would, against a scratch database.
"""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/15"


@pytest.fixture
def pg_url(empty_postgres_url):
    manage(["migrate", "--noinput", "-v", "0"], empty_postgres_url)
    return empty_postgres_url


def env_for(database_url, redis_url=""):
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SQLITE_PATH"}}
    env.update(DJANGO_SETTINGS_MODULE="kernellab.settings", DATABASE_URL=database_url, PYTHONUNBUFFERED="1")
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def manage(args, database_url, redis_url="", timeout=120):
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env_for(database_url, redis_url),
        capture_output=True, text=True, timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def django_script(code, database_url, redis_url=""):
    """Run Python with Django set up against the given services; return its last stdout line as JSON."""
    prelude = "import django, json; django.setup()\n"
    return subprocess.Popen(
        [sys.executable, "-c", prelude + code], cwd=ROOT, env=env_for(database_url, redis_url),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def last_json(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


SEED_JOBS = """
from evaluation import queue
from searches.models import Problem, Kernel
p = Problem.objects.create(name="p", source="x", device="cuda")
ids = []
for i in range(40):
    k = Kernel.objects.create(problem=p, source=f"k{i}")
    ids.append(queue.enqueue_kernel(k).id)
print(json.dumps(ids))
"""

CLAIM_ALL = """
import os
from evaluation import leases
from evaluation.models import EvaluationJob
mine = []
while True:
    job = leases.claim(f"worker-{os.getpid()}", "cuda")
    if job is None:
        break
    mine.append(job.id)
    EvaluationJob.objects.filter(pk=job.pk).update(status="done")
print(json.dumps(mine))
"""


@pytest.mark.slow
def test_concurrent_workers_claim_each_job_once_on_postgres(pg_url):
    ids = last_json(django_script(SEED_JOBS, pg_url))
    workers = [django_script(CLAIM_ALL, pg_url) for _ in range(4)]
    claimed = [job_id for w in workers for job_id in last_json(w)]
    assert sorted(claimed) == sorted(ids), "every job claimed exactly once across four workers"


PUBLISH_AND_LISTEN = """
import asyncio
from channels.layers import get_channel_layer
from django.db import transaction
from live import events, fanout
from searches.models import Problem, Search

async def main():
    problem = await Problem.objects.acreate(name="p", source="x")
    search = await Search.objects.acreate(problem=problem)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(fanout.group_name(search.id), channel)

    def write():
        with transaction.atomic():
            events.publish(search.id, "round.started", {"round": 1})
            events.publish(search.id, "round.started", {"round": 2})

    from asgiref.sync import sync_to_async
    await sync_to_async(write)()
    got = [await asyncio.wait_for(layer.receive(channel), 5) for _ in range(2)]
    print(json.dumps([json.loads(m["text"]) for m in got]))

asyncio.run(main())
"""


@pytest.mark.slow
@pytest.mark.redis
def test_events_reach_listeners_through_redis_after_commit(pg_url, require_redis):
    received = last_json(django_script(PUBLISH_AND_LISTEN, pg_url, REDIS_URL))
    assert [e["seq"] for e in received] == [1, 2]
    assert [e["payload"]["round"] for e in received] == [1, 2]


RUN_TASK_THROUGH_REDIS = """
from django_q.tasks import async_task, result
task_id = async_task("math.hypot", 3, 4)
print(json.dumps({"result": result(task_id, wait=60000)}))
"""


@pytest.mark.slow
@pytest.mark.redis
def test_task_queue_runs_on_redis_broker(pg_url, require_redis):
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=env_for(pg_url, REDIS_URL),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        assert last_json(django_script(RUN_TASK_THROUGH_REDIS, pg_url, REDIS_URL), timeout=90) == {"result": 5.0}
    finally:
        cluster.terminate()  # the cluster's own SIGTERM handler stops its worker processes
        try:
            cluster.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(cluster.pid, 9)
            cluster.wait()


@pytest.mark.slow
def test_web_pages_and_hostile_input_on_postgres(require_postgres):
    """The pages, share links and the fuzzing of every URL, again with PostgreSQL underneath:
    it is stricter than SQLite (NUL in text, types in comparisons), so what passes on the
    default database must pass there too."""
    files = ["tests/searches/test_fuzz.py", "tests/searches/test_share_links.py", "tests/searches/test_dashboard_views.py"]
    env = env_for(f"postgres://postgres@127.0.0.1:5432/kernellab_web_{uuid.uuid4().hex[:10]}")
    result = subprocess.run([sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "--create-db"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0 and " passed" in summary and "skipped" not in summary, result.stdout[-4000:]


@pytest.mark.slow
@pytest.mark.redis
def test_rate_limits_hold_across_web_processes_through_redis(pg_url, require_redis):
    """Failed logins counted by one web process block the next attempt in another."""
    who = f"203.0.113.9|mallory-{uuid.uuid4().hex[:8]}"
    count = f"""
from lib import ratelimit
for _ in range(ratelimit.LOGIN_FAILURES.count):
    ratelimit.count(ratelimit.LOGIN_FAILURES, {who!r})
print(json.dumps(ratelimit.retry_after(ratelimit.LOGIN_FAILURES, {who!r})))
"""
    check = f"""
import logging
from logging.handlers import BufferingHandler
from django.conf import settings
from lib import ratelimit
warned = BufferingHandler(100)  # a cache that failed the read fails open with a warning: said in the assertion
logging.getLogger("lib.ratelimit").addHandler(warned)
print(json.dumps([settings.CACHES["default"]["BACKEND"], ratelimit.retry_after(ratelimit.LOGIN_FAILURES, {who!r}),
                  ratelimit.retry_after(ratelimit.LOGIN_FAILURES, "someone else"),
                  [record.getMessage() for record in warned.buffer]]))
"""
    assert last_json(django_script(count, pg_url, REDIS_URL)) > 0
    backend, wait, other, warned = last_json(django_script(check, pg_url, REDIS_URL))
    assert backend.endswith("RedisCache") and wait > 0 and other == 0, (wait, other, warned)
