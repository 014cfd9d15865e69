"""A search run measured through the product's own path (`manage.py bench_run`, scripts/gpu_run.sh): a
suite's problems validated by an evaluator child, one search configuration started on all of them as
one run (`start_run`, its knobs), the run's searches driven in this process until each is done (its
verified reruns judged too) or the time is up, then the run's scores (`run_scores --every`)."""

import io
import time

from django.core.management import call_command
from django.core.management.base import CommandError

from benches import throughput
from runs.models import Run
from searches import services
from searches.foreground import Engines, EvaluatorChild, queue_validation
from searches.models import Problem, Search, Suite

WAITING = (Problem.Validation.PENDING, Problem.Validation.RUNNING)


def validate_suite(suite: Suite, worker: EvaluatorChild, deadline: float) -> list[Problem]:
    """Every problem of the suite once its validation has run on the worker (queued here if none is);
    those still waiting at the deadline are left out."""
    problems = [m.problem for m in suite.members.select_related("problem").order_by("level", "number", "id")]
    for problem in problems:
        queue_validation(problem)
    ids = [p.pk for p in problems]
    worker.wait(lambda: time.monotonic() > deadline
                or not Problem.objects.filter(pk__in=ids, validation_status__in=WAITING).exists())
    for problem in problems:
        problem.refresh_from_db()
    return problems


def start_and_drive(*, suite: Suite, name: str, knobs: list[str], user: str, worker: EvaluatorChild,
                    deadline: float, say) -> Run:
    """`start_run` on the suite (its report said), its searches advanced here until each is finished or
    the deadline passes; those still running are then paused (their queued candidates are not judged)."""
    with Engines() as engines:  # the searches' kicks wake threads here, not the task queue
        report = io.StringIO()
        try:
            call_command("start_run", *knobs, "--suite", suite.name, "--name", name,
                         *(["--user", user] if user else []), stdout=report)
        finally:
            say(report.getvalue().rstrip())
        run = Run.objects.get(suite=suite, name=name)
        ids = list(run.run_searches.values_list("search_id", flat=True))
        if not ids:
            raise CommandError("the run started no search (see the report above)")
        for search_id in ids:
            engines.start(search_id)
        worker.wait(lambda: time.monotonic() > deadline or all(throughput.finished(i) for i in ids)
                    or engines.died())
        for search in Search.objects.filter(pk__in=ids, status__in=Search.ACTIVE):
            services.search_pause(search=search, user=None)
            say(f"paused at the deadline: {search}")
    return run
