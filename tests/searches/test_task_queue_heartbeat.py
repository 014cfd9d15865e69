"""The web server holds no Anthropic key: a real `qcluster` says in its heartbeat row whether it
has one (never the key), and the proposer check reads that row. The row is the task queue's own
(TaskQueueHeartbeat), never a Worker: the Workers page lists evaluators only."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation.models import Worker
from searches import task_queue
from searches.models import Problem, TaskQueueHeartbeat
from searches.selectors import search_proposer_unavailable

from .engine_env import env_for, manage, query, script, start, stop, wait_for

CANARY = "sk-ant-canary-heartbeat-0123456789"
CHECK = ("from searches.selectors import search_proposer_unavailable\n"
         "print(json.dumps(search_proposer_unavailable(problem=Problem(name='x'), proposer='anthropic', device='cpu')))\n")


def task_queue_rows(db):
    return query(db, "select anthropic_key from searches_taskqueueheartbeat")


@pytest.mark.django_db
def test_only_a_fresh_heartbeat_with_a_key_offers_the_anthropic_proposer(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    def unavailable():
        return search_proposer_unavailable(problem=Problem(name="x"), proposer="anthropic", device="cpu")

    assert "needs an API key" in unavailable()
    row = TaskQueueHeartbeat.objects.create(host="h", anthropic_key=False, heartbeat_at=timezone.now())
    assert "needs an API key" in unavailable()
    TaskQueueHeartbeat.objects.filter(pk=row.pk).update(anthropic_key=True)
    assert unavailable() == ""
    TaskQueueHeartbeat.objects.filter(pk=row.pk).update(
        heartbeat_at=timezone.now() - task_queue.SEEN_WITHIN - timedelta(seconds=1))
    assert "needs an API key" in unavailable()  # the task queue that had the key is gone


@pytest.mark.django_db
def test_a_beat_writes_the_task_queues_own_row_and_no_worker(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key")
    task_queue.beat()
    task_queue.beat()  # one row per host, refreshed
    assert list(TaskQueueHeartbeat.objects.values_list("anthropic_key", flat=True)) == [True]
    assert not Worker.objects.exists()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    task_queue.beat()
    assert list(TaskQueueHeartbeat.objects.values_list("anthropic_key", flat=True)) == [False]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_task_queue_tells_the_web_server_whether_it_has_a_key(tmp_path):
    db = tmp_path / "db.sqlite3"
    manage(db, "migrate", "--noinput", "-v", "0")
    # A process without the key (the web server) and no task queue: the proposer is unavailable.
    assert "needs an API key" in script(db, CHECK)
    tasks = start(db, "qcluster", env=env_for(db, ANTHROPIC_API_KEY=CANARY), log_to=tmp_path / "tasks.log")
    try:
        wait_for(lambda: task_queue_rows(db) == [(1,)], timeout=90,
                 what="the task queue's heartbeat")
        assert script(db, CHECK) == ""  # offered, though this process has no key
    finally:
        stop(tasks)
    tasks = start(db, "qcluster", log_to=tmp_path / "tasks.log")  # restarted without a key
    try:
        wait_for(lambda: task_queue_rows(db) == [(0,)], timeout=90,
                 what="the keyless heartbeat")
        assert "needs an API key" in script(db, CHECK)
    finally:
        stop(tasks)
    query(db, "pragma wal_checkpoint(TRUNCATE)")
    assert CANARY.encode() not in db.read_bytes()
    assert CANARY not in (tmp_path / "tasks.log").read_text(errors="replace")
