"""A running job's phases, as the evaluator hears them from the runner: kept on the job with each
phase's seconds while the worker holds it, told on the problem's stream for work of no search,
and never written over a job that is another worker's or already done."""

import time

import pytest
from django.utils import timezone

from evaluation.models import EvaluationJob
from evaluation.worker import PhaseClock, PhaseWriter
from live.models import ProblemEvent
from searches import services
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db(transaction=True)


def running_job(purpose="manual", search=None, owner="w1"):
    problem = d.problem()
    kernel = d.kernel(problem=problem, search=search, status="evaluating", run=False)
    return EvaluationJob.objects.create(problem=problem, kernel=kernel, purpose=purpose, status="leased",
                                        lease_owner=owner, run_started_at=timezone.now())


def test_each_phase_and_its_seconds_are_kept_and_told_on_the_problems_stream():
    job = running_job()
    clock = PhaseClock(job.id, "w1", PhaseWriter())
    for phase in ("starting", "compiling", "checking", "timing"):
        clock.enter(phase)
    clock.drain()
    job.refresh_from_db()
    assert job.phase == "timing" and job.phase_started_at is not None
    assert set(job.phase_seconds) == {"starting", "compiling", "checking"}
    clock.close()  # inside the verdict's transaction: the last phase's seconds, and no phase any more
    job.refresh_from_db()
    assert job.phase == "" and set(job.phase_seconds) == {"starting", "compiling", "checking", "timing"}
    told = list(ProblemEvent.objects.filter(problem=job.problem).values_list("kind", "payload__phase"))
    assert told == [("job.phase", p) for p in ("starting", "compiling", "checking", "timing", "")]


def test_a_job_that_is_not_this_workers_is_left_alone():
    job = running_job(owner="another")
    assert services.job_record_phase(job_id=job.id, worker="w1", phase="timing", started_at=timezone.now(),
                                     seconds={"compiling": 3.0}) is False
    EvaluationJob.objects.filter(pk=job.pk).update(lease_owner="w1", status="done")
    assert services.job_record_phase(job_id=job.id, worker="w1", phase="timing", started_at=timezone.now(),
                                     seconds={}) is False
    job.refresh_from_db()
    assert job.phase == "" and job.phase_seconds == {}


def test_a_search_kernels_phases_stay_off_the_problems_stream():
    problem = d.problem()
    search = d.search(problem=problem)
    kernel = d.kernel(problem=problem, search=search, status="evaluating", run=False)
    job = EvaluationJob.objects.create(problem=problem, kernel=kernel, purpose="search", status="leased",
                                       lease_owner="w1")
    assert services.job_record_phase(job_id=job.id, worker="w1", phase="compiling", started_at=timezone.now(),
                                     seconds={})
    assert not ProblemEvent.objects.exists()


def test_a_phase_write_stuck_on_the_database_does_not_hold_the_worker_process_at_exit():
    """The writer's thread is a daemon: a write still retrying on a locked database is dropped at exit
    (the verdict is written on its own) instead of keeping the process alive."""
    import subprocess
    import sys

    stuck = ("import django, os, threading, time;"
             "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'kernellab.settings'); django.setup();"
             " from evaluation.worker import PhaseWriter; w = PhaseWriter();"
             "w.submit(print, 'first').result(timeout=5); w.submit(threading.Event().wait); time.sleep(0.2)")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", stuck], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "first\n", done.stderr
    assert time.monotonic() - started < 30
