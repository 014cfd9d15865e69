"""A validation the device cannot run (out of memory, held by others) fails the worker's
attempt, never the problem: it ends `error` ("could not run"), not `invalid`."""

import pytest

from evaluation import queue
from evaluation.models import EvaluationJob
from evaluation.worker import EvaluationWorker
from runner.host import evaluation
from searches.models import Problem
from tests.runner.test_timing_lock import OUT_OF_MEMORY_PROBLEM


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the lease renewer is a thread with its own connection
def test_an_out_of_memory_validation_is_an_infrastructure_failure(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELLAB_BASELINE_COMPILE", "0")
    monkeypatch.setattr(evaluation, "OOM_PAUSE_S", 0.0)
    problem = Problem.objects.create(name="held", source=OUT_OF_MEMORY_PROBLEM, device="cpu")
    job = queue.enqueue_validation(problem)
    EvaluationJob.objects.filter(pk=job.pk).update(max_attempts=1)

    EvaluationWorker(name="busy-cpu", device="cpu", pool_size=0, rekick_seconds=0).run(once=True)

    job.refresh_from_db()
    problem.refresh_from_db()
    assert job.status == "failed"
    assert "infrastructure failure, not a verdict" in job.last_error and "out of memory" in job.last_error
    assert problem.validation_status == Problem.Validation.ERROR
    assert problem.validation_status != Problem.Validation.INVALID
