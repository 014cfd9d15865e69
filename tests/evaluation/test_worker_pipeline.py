"""The pipelined worker: several jobs in flight on one pool, each judged as alone."""

import pytest

from evaluation import queue
from evaluation.models import EvaluationJob
from evaluation.worker import EvaluationWorker
from searches.models import Kernel, Problem
from tests.runner import sources


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # job threads and lease renewers have connections of their own
def test_two_jobs_in_flight_are_each_judged_right(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELLAB_BASELINE_COMPILE", "0")
    problem = Problem.objects.create(name="silu", source=sources.SILU_PROBLEM, device="cpu")
    broken = sources.SILU_KERNEL.replace("y[i] = x[i] / (1.0f + expf(-x[i]))", "y[i] = x[i]")
    kernels = [Kernel.objects.create(problem=problem, source=source, origin="user")
               for source in (sources.SILU_KERNEL, broken, sources.SILU_KERNEL)]
    for kernel in kernels:
        queue.enqueue_kernel(kernel, purpose=EvaluationJob.Purpose.MANUAL)

    worker = EvaluationWorker(name="pipe-cpu", device="cpu", pool_size=2, rekick_seconds=0, jobs_in_flight=2)
    done = worker.run(once=True)

    assert done == 3 and worker.peak_in_flight == 2
    assert [Kernel.objects.get(pk=k.pk).status for k in kernels] == ["correct", "incorrect", "correct"]
    assert set(EvaluationJob.objects.values_list("status", flat=True)) == {"done"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_jobs_that_build_nothing_long_stay_within_their_own_limit(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KERNELLAB_BASELINE_COMPILE", "0")
    problem = Problem.objects.create(name="silu", source=sources.SILU_PROBLEM, device="cpu")
    kernels = [Kernel.objects.create(problem=problem, source=sources.SILU_KERNEL, origin="user") for _ in range(3)]
    for kernel in kernels:
        queue.enqueue_kernel(kernel, purpose=EvaluationJob.Purpose.MANUAL)

    worker = EvaluationWorker(name="pipe-quick", device="cpu", pool_size=2, rekick_seconds=0, jobs_in_flight=3,
                              quick_in_flight=1)
    assert worker.run(once=True) == 3
    assert worker.peak_in_flight == 1 and worker.peak_quick == 1  # one at a time, though three could run
    assert [Kernel.objects.get(pk=k.pk).status for k in kernels] == ["correct"] * 3
