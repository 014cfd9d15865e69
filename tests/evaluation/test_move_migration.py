"""Evaluation took its models over from searches in state only: a database filled before the move
(through the historical models of its migrations) reads the same after it, through the new models,
on SQLite and on PostgreSQL. The task queue's heartbeat rows leave the Worker table for their own."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_move(**database) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SQLITE_PATH"}}
    env.update(DJANGO_SETTINGS_MODULE="kernellab.settings", **database)
    done = subprocess.run([sys.executable, "-m", "tests.evaluation.move_data"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check(moved: dict) -> None:
    before, after, links = moved["before"], moved["after"], moved["links"]
    # filled just before the move: searches up to the migration before the one that hands the models over
    assert links["applied"] == links["removal_parents"] and len(links["applied"]) == 1
    counts = {name: len(rows) for name, rows in before["rows"].items()}
    assert counts == {"Problem": 1, "Search": 1, "Idea": 1, "Kernel": 3, "EvaluationJob": 5, "BenchmarkRun": 3,
                      "ShareLink": 1, "SearchEvent": 1, "ProblemEvent": 1}
    # Every row, every field value, every foreign key id; fields later migrations add are left out, and the
    # one they took away is last_event_seq, gone to live's stream counters (tests/live/test_events_move.py).
    assert after["rows"].keys() == before["rows"].keys()
    for name, rows in before["rows"].items():
        assert len(after["rows"][name]) == len(rows), name
        for old, new in zip(rows, after["rows"][name]):
            assert set(old) - set(new) <= {"last_event_seq"}, name
            assert {k: new[k] for k in old if k in new} == {k: v for k, v in old.items() if k in new}, name
    assert after["workers"] == before["workers"] and len(after["workers"]) == 2  # the evaluators
    assert after["tables"] == before["tables"] == {"EvaluationJob": "searches_evaluationjob",
                                                   "Worker": "searches_worker"}
    assert links["app_labels"] == ["evaluation"]
    assert links["problem_jobs"] == 5 and links["kernel_jobs"] == [1, 1, 1]
    assert links["run_job_kernel"] == ["# kernel 0\n", "# kernel 1\n", None]
    assert links["worker_job"] == ["# kernel 2\n", "timing"]
    assert (links["requested_by"], links["tool_search"]) == ("alice", "a search")
    assert links["workers"] == ["cpu-old", "gpu0"]  # the task queue's row is no worker any more
    assert links["heartbeats"] == [["h", 99, True]]  # it is the task queue's own row, its key flag kept
    assert links["content_types"] == [["evaluation", "evaluationjob"], ["evaluation", "worker"]]


def test_the_move_keeps_the_data_on_sqlite(tmp_path):
    check(run_move(SQLITE_PATH=str(tmp_path / "moved.sqlite3")))


@pytest.mark.postgres
def test_the_move_keeps_the_data_on_postgresql(empty_postgres_url):
    check(run_move(DATABASE_URL=empty_postgres_url))


@pytest.mark.django_db
def test_the_models_and_their_migrations_agree():
    """State-only migrations must say exactly what the models say, or the next makemigrations would."""
    from django.core.management import call_command

    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # SystemExit(1) on a change
