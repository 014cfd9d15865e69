"""Run as `python -m tests.evaluation.move_data` against an empty database (SQLITE_PATH or DATABASE_URL):
migrates it to the state just before evaluation took its models over from searches, fills it through
that state's historical models, migrates it to the latest, and prints, as JSON, what it read before
and after (tests/evaluation/test_move_migration.py compares them)."""

import json
import os
from datetime import timedelta

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernellab.settings")
django.setup()

from django.apps import apps as final_apps  # noqa: E402
from django.core.serializers.json import DjangoJSONEncoder  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.migrations.executor import MigrationExecutor  # noqa: E402
from django.utils import timezone  # noqa: E402

MOVE = ("evaluation", "0001_initial")
# Read before and after by model name (whichever app holds the model then), compared row for row.
COMPARED = ["Problem", "Search", "Idea", "Kernel", "EvaluationJob", "BenchmarkRun", "ShareLink", "SearchEvent",
            "ProblemEvent"]
KEY_SET = "Task queue (Anthropic key set)"


def pre_move_targets(graph) -> list[tuple[str, str]]:
    """Each app's latest migration that does not need the move (evaluation has none: not applied)."""
    targets = []
    for app in sorted({app for app, _ in graph.nodes}):
        before = [node for node in graph.nodes if node[0] == app and MOVE not in graph.forwards_plan(node)]
        if before:
            targets.append(max(before, key=lambda node: len(graph.forwards_plan(node))))
    return targets


def model(apps, name: str):
    found = [m for m in apps.get_models() if m.__name__ == name]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def rows(apps, name: str) -> list[dict]:
    return list(model(apps, name).objects.order_by("pk").values())


def populate(apps) -> None:
    now = timezone.now()
    User = apps.get_model("auth", "User")
    Problem, Search, Idea, Kernel = (model(apps, n) for n in ("Problem", "Search", "Idea", "Kernel"))
    Job, Run, Worker = (model(apps, n) for n in ("EvaluationJob", "BenchmarkRun", "Worker"))
    alice = User.objects.create(username="alice")
    problem = Problem.objects.create(name="silu", source="class Model: pass\n", device="cuda", created_by=alice,
                                     validation_status="ok", validation={"baseline": {"eager_ms": 2.0}})
    search = Search.objects.create(problem=problem, created_by=alice, proposer="playbook", device="cuda",
                                   status="running", name="a search")
    idea = Idea.objects.create(search=search, title="fuse", description="one pass", round=1)
    kernels = [Kernel.objects.create(problem=problem, search=search, idea=idea, source=f"# kernel {i}\n",
                                     round=1, status=status, median_ms=ms)
               for i, (status, ms) in enumerate([("correct", 0.5), ("incorrect", None), ("pending", None)])]
    Job.objects.create(problem=problem, purpose="validate", device="cuda", status="done", priority=10,
                                  attempts=1, requested_by=alice, finished_at=now, phase_seconds={"timing": 1.5})
    judged = Job.objects.create(problem=problem, kernel=kernels[0], purpose="search", device="cuda", status="done",
                                seed=11, options={"allow_library": True}, attempts=1, lease_owner="gpu0")
    failed = Job.objects.create(problem=problem, kernel=kernels[1], purpose="search", device="cuda",
                                status="failed", attempts=3, infra_attempts=1, last_error="kept killing its worker")
    running = Job.objects.create(problem=problem, kernel=kernels[2], purpose="search", device="cuda",
                                 status="leased", lease_owner="gpu0", lease_expires_at=now + timedelta(minutes=5),
                                 phase="timing", phase_started_at=now)
    Job.objects.create(problem=problem, search=search, purpose="tool", device="cuda", status="queued",
                       options={"tool": "check", "source": "# draft\n"}, max_attempts=1)
    Run.objects.create(kernel=kernels[0], job=judged, purpose="search", status="correct", median_ms=0.5,
                       device_name="NVIDIA H100", worker="gpu0", result={"status": "correct"})
    Run.objects.create(kernel=kernels[1], job=failed, purpose="search", status="incorrect", reason="wrong")
    Run.objects.create(kernel=kernels[1], job=None, purpose="rerun", status="incorrect")
    Worker.objects.create(name="gpu0", host="h", pid=7, device="cuda", device_name="NVIDIA H100",
                          device_facts={"name": "NVIDIA H100", "sm_count": 132}, heartbeat_at=now,
                          current_job=running, jobs_done=2)
    Worker.objects.create(name="cpu-old", host="h", device="cpu", heartbeat_at=now - timedelta(days=2))
    # The task queue's heartbeat as it was kept: a Worker row of device "tasks".
    Worker.objects.create(name="tasks@h", host="h", pid=99, device="tasks", device_name=KEY_SET, heartbeat_at=now)
    model(apps, "ShareLink").objects.create(token_hash="f" * 64, kind="kernel", kernel=kernels[0], created_by=alice)
    model(apps, "SearchEvent").objects.create(search=search, seq=1, kind="search.started", payload={"round": 1})
    model(apps, "ProblemEvent").objects.create(problem=problem, seq=1, kind="job.phase", payload={"phase": "timing"})
    ContentType = apps.get_model("contenttypes", "ContentType")
    for name in ("evaluationjob", "worker"):
        ContentType.objects.get_or_create(app_label="searches", model=name)


def read(apps) -> dict:
    Worker = model(apps, "Worker")
    return {"rows": {name: rows(apps, name) for name in COMPARED},
            "workers": list(Worker.objects.exclude(device="tasks").order_by("pk").values()),
            "tables": {name: model(apps, name)._meta.db_table for name in ("EvaluationJob", "Worker")}}


def main() -> None:
    executor = MigrationExecutor(connection)
    before_move = pre_move_targets(executor.loader.graph)
    executor.migrate(before_move)
    old_apps = executor.loader.project_state(before_move).apps
    populate(old_apps)
    before = read(old_apps)

    executor = MigrationExecutor(connection)
    graph = executor.loader.graph
    executor.migrate(graph.leaf_nodes())
    after = read(final_apps)

    # Through the new models: the foreign keys both ways across the two apps.
    from evaluation.models import EvaluationJob, Worker
    from searches.models import BenchmarkRun, Kernel, Problem, TaskQueueHeartbeat

    problem = Problem.objects.get()
    worker = Worker.objects.get(name="gpu0")
    ContentType = final_apps.get_model("contenttypes", "ContentType")
    links = {
        "app_labels": sorted({EvaluationJob._meta.app_label, Worker._meta.app_label}),
        "problem_jobs": problem.jobs.count(),
        "kernel_jobs": [kernel.jobs.count() for kernel in Kernel.objects.order_by("pk")],
        "run_job_kernel": [(run.job.kernel.source if run.job else None) for run in BenchmarkRun.objects.order_by("pk")],
        "job_runs": sorted(job.pk for job in EvaluationJob.objects.filter(run__isnull=False)),
        "worker_job": [worker.current_job.kernel.source, worker.current_job.phase],
        "requested_by": EvaluationJob.objects.get(purpose="validate").requested_by.username,
        "tool_search": EvaluationJob.objects.get(purpose="tool").search.name,
        "workers": sorted(Worker.objects.values_list("name", flat=True)),
        "heartbeats": list(TaskQueueHeartbeat.objects.values_list("host", "pid", "anthropic_key")),
        "content_types": sorted(ContentType.objects.filter(model__in=["evaluationjob", "worker"])
                                .values_list("app_label", "model")),
        "applied": sorted(f"{app}.{name}" for app, name in before_move if app in ("searches", "evaluation")),
        # the searches migration that takes the models out of its state, and the searches one before it
        "removal_parents": sorted(f"{app}.{name}" for node in graph.nodes if node[0] == "searches"
                                  and MOVE in {p.key for p in graph.node_map[node].parents}
                                  for app, name in (p.key for p in graph.node_map[node].parents) if app == "searches"),
    }
    print(json.dumps({"before": before, "after": after, "links": links}, cls=DjangoJSONEncoder))


if __name__ == "__main__":
    main()
