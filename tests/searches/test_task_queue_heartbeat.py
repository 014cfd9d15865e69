"""The web server holds no Anthropic key: a real `qcluster` says in its heartbeat row whether it
has one (never the key), and the proposer check reads that row."""

from datetime import timedelta

import pytest
from django.utils import timezone

from searches import task_queue
from evaluation.models import Worker
from searches.models import Problem
from searches.selectors import search_proposer_unavailable

from .engine_env import env_for, manage, query, script, start, stop, wait_for


CANARY = "sk-ant-canary-heartbeat-0123456789"
CHECK = ("from searches.selectors import search_proposer_unavailable\n"
         "print(json.dumps(search_proposer_unavailable(problem=Problem(name='x'), proposer='anthropic', device='cpu')))\n")


def task_queue_rows(db):
    return query(db, "select device_name from searches_worker where device='tasks'")


@pytest.mark.django_db
def test_only_a_fresh_heartbeat_with_a_key_offers_the_anthropic_proposer(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    def unavailable():
        return search_proposer_unavailable(problem=Problem(name="x"), proposer="anthropic", device="cpu")

    assert "needs an API key" in unavailable()
    row = Worker.objects.create(name="tasks@h", device=task_queue.DEVICE, device_name=task_queue.NO_KEY,
                                heartbeat_at=timezone.now())
    assert "needs an API key" in unavailable()
    Worker.objects.filter(pk=row.pk).update(device_name=task_queue.KEY_SET)
    assert unavailable() == ""
    Worker.objects.filter(pk=row.pk).update(heartbeat_at=timezone.now() - task_queue.SEEN_WITHIN - timedelta(seconds=1))
    assert "needs an API key" in unavailable()  # the task queue that had the key is gone


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_task_queue_tells_the_web_server_whether_it_has_a_key(tmp_path):
    db = tmp_path / "db.sqlite3"
    manage(db, "migrate", "--noinput", "-v", "0")
    # A process without the key (the web server) and no task queue: the proposer is unavailable.
    assert "needs an API key" in script(db, CHECK)
    tasks = start(db, "qcluster", env=env_for(db, ANTHROPIC_API_KEY=CANARY), log_to=tmp_path / "tasks.log")
    try:
        wait_for(lambda: task_queue_rows(db) == [("Task queue (Anthropic key set)",)], timeout=90,
                 what="the task queue's heartbeat")
        assert script(db, CHECK) == ""  # offered, though this process has no key
    finally:
        stop(tasks)
    tasks = start(db, "qcluster", log_to=tmp_path / "tasks.log")  # restarted without a key
    try:
        wait_for(lambda: task_queue_rows(db) == [("Task queue (no Anthropic key)",)], timeout=90,
                 what="the keyless heartbeat")
        assert "needs an API key" in script(db, CHECK)
    finally:
        stop(tasks)
    query(db, "pragma wal_checkpoint(TRUNCATE)")
    assert CANARY.encode() not in db.read_bytes()
    assert CANARY not in (tmp_path / "tasks.log").read_text(errors="replace")
