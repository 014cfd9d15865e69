"""A worker that lost its job to another (its heartbeat went stale, and another worker claimed the
job) is fenced: it records no verdict for it, so one job gets one verdict."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from evaluation import leases, queue
from evaluation import worker as worker_module
from evaluation.models import EvaluationJob, Worker
from evaluation.worker import EvaluationWorker
from searches.models import BenchmarkRun, Kernel, Problem
from tests.runner import sources
from tests.searches.test_engine import runner_verdict

STALE = leases.STALE_AFTER_BEATS * Worker.HEARTBEAT_SECONDS + 1


def queued_kernel(source: str = "class ModelNew: pass\n") -> EvaluationJob:
    problem = Problem.objects.create(name="silu", source=sources.SILU_PROBLEM, device="cpu")
    kernel = Kernel.objects.create(problem=problem, source=source, origin="user")
    return queue.enqueue_kernel(kernel, purpose=EvaluationJob.Purpose.MANUAL)


def take_over(job_id: int, first: str, second: str) -> EvaluationJob:
    """The first holder's heartbeat goes stale and the second worker claims its job."""
    Worker.objects.update_or_create(name=first, defaults={"heartbeat_at": timezone.now() - timedelta(seconds=STALE)})
    taken = leases.claim(second, "cpu")
    assert taken is not None and taken.pk == job_id
    return taken


@pytest.mark.django_db
def test_a_worker_that_lost_its_job_records_no_verdict_and_the_new_holder_does():
    job = queued_kernel()
    held = leases.claim("first", "cpu")
    taken = take_over(job.pk, "first", "second")

    assert EvaluationWorker(name="first", device="cpu")._record(held, runner_verdict()) is False
    assert BenchmarkRun.objects.count() == 0
    assert Kernel.objects.get(pk=job.kernel_id).status == "pending"

    assert EvaluationWorker(name="second", device="cpu")._record(taken, runner_verdict(median_ms=2.0)) is True
    [run] = BenchmarkRun.objects.all()
    assert (run.worker, run.median_ms) == ("second", 2.0)
    assert EvaluationJob.objects.get(pk=job.pk).status == "done"


@pytest.mark.django_db(transaction=True)  # the renewer is a thread with its own connection
def test_the_lease_renewer_notices_a_lost_job_at_its_next_beat(monkeypatch):
    monkeypatch.setattr(worker_module, "HEARTBEAT_SECONDS", 0.1)
    job = queued_kernel()
    leases.claim("first", "cpu")
    renewer = worker_module.job_renewer(job.pk, "first")
    renewer.start()
    try:
        renewer.join(0.5)
        assert renewer.is_alive() and not renewer.lost.is_set()  # beating while it holds the job
        take_over(job.pk, "first", "second")
        assert renewer.lost.wait(5)
        renewer.join(5)
        assert not renewer.is_alive()
    finally:
        renewer.stop()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the worker's lease renewer and the thread taking over have connections
def test_a_real_run_whose_job_was_taken_over_midway_is_stopped_there_and_dropped(monkeypatch, settings, tmp_path):
    """The candidate would keep its sandbox busy for the whole runner timeout; once another worker
    holds the job, the first worker's renewer notices at its next beat and kills the run."""
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELLAB_BASELINE_COMPILE", "0")
    monkeypatch.setattr(worker_module, "HEARTBEAT_SECONDS", 0.2)
    settings.RUNNER_TIMEOUT = 300
    job = queued_kernel(sources.SILU_KERNEL + "\nwhile True:  # busy for the whole timeout\n    pass\n")
    taken = {}

    def take_over_once_running():
        try:
            end = time.monotonic() + 300
            while time.monotonic() < end:
                if EvaluationJob.objects.filter(pk=job.pk, run_started_at__isnull=False).exists():
                    time.sleep(3)  # the candidate is spinning in its sandbox by now
                    taken["job"] = take_over(job.pk, "first", "second")
                    taken["at"] = time.monotonic()
                    return
                time.sleep(0.02)
        finally:
            connection.close()

    thief = threading.Thread(target=take_over_once_running, daemon=True)
    thief.start()
    first = EvaluationWorker(name="first", device="cpu", pool_size=0, rekick_seconds=0)
    assert first.run(once=True) == 0  # its run was stopped, and it recorded nothing
    stopped_after = time.monotonic() - taken["at"]
    thief.join(5)

    assert stopped_after < 30, f"the run went on {stopped_after:.0f} s after the job was taken"
    fresh = EvaluationJob.objects.get(pk=job.pk)
    assert (fresh.status, fresh.lease_owner, fresh.attempts) == ("leased", "second", 2)
    assert BenchmarkRun.objects.count() == 0
    assert Kernel.objects.get(pk=job.kernel_id).status == "evaluating"  # not judged by the fenced worker
