"""The event logs moved from `searches` to `live` on real data: a database built at the state before the move
(searches 0020, every other app at its latest migration that needs no later searches one, no live), filled
through the historical models (a problem, a search, kernels, events of both streams, their counters), then
migrated forward and read back through today's models; then migrated back. In a separate process on a
scratch database: SQLite always, PostgreSQL under the `postgres` marker."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two processes' worth of migrations, forward and back

ROOT = Path(__file__).resolve().parents[2]
BEFORE_MOVE = ("searches", "0020_job_purpose_tool")

SCRIPT = """
import json

import django

django.setup()
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

BEFORE_MOVE = %r


def before_move_targets(graph):
    later = {node for node in graph.nodes if node[0] == "live"} | {
        node for node in graph.nodes if node[0] == "searches" and node[1] > BEFORE_MOVE[1]}
    targets = [BEFORE_MOVE]
    for app in sorted({node[0] for node in graph.nodes} - {"searches", "live"}):
        fits = [node for node in graph.nodes if node[0] == app and not later & set(graph.forwards_plan(node))]
        targets.append(max(fits) if fits else (app, None))
    return targets


executor = MigrationExecutor(connection)
targets = before_move_targets(executor.loader.graph)
executor.migrate(targets)
executor.loader.build_graph()
old = executor.loader.project_state(targets).apps
assert not any(m._meta.app_label == "live" for m in old.get_models())

Problem, Search, Kernel = (old.get_model("searches", n) for n in ("Problem", "Search", "Kernel"))
SearchEvent, ProblemEvent = old.get_model("searches", "SearchEvent"), old.get_model("searches", "ProblemEvent")
with transaction.atomic():
    problem = Problem.objects.create(name="p", source="x", last_event_seq=7)  # counter ahead of its log
    quiet = Problem.objects.create(name="q", source="y")  # no event: no counter
    search = Search.objects.create(problem=problem, last_event_seq=3)  # a stale counter behind its log (4)
    other = Search.objects.create(problem=problem, last_event_seq=2)
    seed = Kernel.objects.create(problem=problem, search=search, source="s", name="seed")
    Kernel.objects.create(problem=problem, search=search, source="c", name="child", parent=seed)
    for seq, kind in enumerate(["search.status", "kernel.created", "kernel.created", "kernel.updated"], start=1):
        SearchEvent.objects.create(search=search, seq=seq, kind=kind, payload={"n": seq})
    for seq in (1, 2):
        SearchEvent.objects.create(search=other, seq=seq, kind="round.started", payload={"round": seq})
    for seq in (1, 2, 3):
        ProblemEvent.objects.create(problem=problem, seq=seq, kind="job.phase", payload={"phase": f"p{seq}"})

executor = MigrationExecutor(connection)
executor.migrate(executor.loader.graph.leaf_nodes())

from live import events
from live.models import ProblemEvent as NewProblemEvent
from live.models import SearchEvent as NewSearchEvent
from live.models import StreamCounter
from searches.models import Search as NewSearch

out = {
    "search_events": [[e.seq, e.kind, e.payload] for e in NewSearchEvent.objects.filter(search_id=search.id)],
    "other_events": list(NewSearchEvent.objects.filter(search_id=other.id).values_list("seq", flat=True)),
    "problem_events": [[e.seq, e.kind, e.payload] for e in NewProblemEvent.objects.filter(problem_id=problem.id)],
    "related": [e.search.id for e in NewSearch.objects.get(pk=search.id).events.all()],
    "counters": sorted([c.stream, c.owner_id, c.last_seq] for c in StreamCounter.objects.all()),
    "ids": {"search": search.id, "other": other.id, "problem": problem.id, "quiet": quiet.id},
    "columns": sorted(f.name for f in NewSearch._meta.get_fields()),
}
with transaction.atomic():  # the numbering goes on from the copied counters
    out["next_search"] = events.publish(search.id, "round.started", {"round": 1}).seq
    out["next_problem"] = events.publish_problem(problem.id, "problem.validation", {}).seq

executor = MigrationExecutor(connection)  # and back: the counters return to their columns
executor.migrate(targets)
back = MigrationExecutor(connection).loader.project_state(targets).apps
out["back"] = {
    "search": back.get_model("searches", "Search").objects.get(pk=search.id).last_event_seq,
    "problem": back.get_model("searches", "Problem").objects.get(pk=problem.id).last_event_seq,
    "events": back.get_model("searches", "SearchEvent").objects.filter(search_id=search.id).count(),
}
print(json.dumps(out))
""" % (BEFORE_MOVE,)


def run_move(database_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SQLITE_PATH"}}
    env.update(DJANGO_SETTINGS_MODULE="kernellab.settings", DATABASE_URL=database_url, PYTHONUNBUFFERED="1")
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def check(out: dict) -> None:
    ids = out["ids"]
    assert out["search_events"] == [[1, "search.status", {"n": 1}], [2, "kernel.created", {"n": 2}],
                                    [3, "kernel.created", {"n": 3}], [4, "kernel.updated", {"n": 4}]]
    assert out["other_events"] == [1, 2]
    assert out["problem_events"] == [[s, "job.phase", {"phase": f"p{s}"}] for s in (1, 2, 3)]
    assert out["related"] == [ids["search"]] * 4  # the foreign key to searches.Search still joins
    # Each counter copied, never below its log; a stream with no event has no row.
    assert out["counters"] == sorted([["search", ids["search"], 4], ["search", ids["other"], 2],
                                      ["problem", ids["problem"], 7]])
    assert "last_event_seq" not in out["columns"]
    assert (out["next_search"], out["next_problem"]) == (5, 8)
    assert out["back"] == {"search": 5, "problem": 8, "events": 5}


def test_the_move_keeps_events_and_numbers_on_sqlite(tmp_path):
    check(run_move(f"sqlite:///{tmp_path / 'move.sqlite3'}"))


@pytest.mark.postgres
def test_the_move_keeps_events_and_numbers_on_postgres(empty_postgres_url):
    check(run_move(empty_postgres_url))
