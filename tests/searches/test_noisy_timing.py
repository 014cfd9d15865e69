"""A correct kernel timed on a disturbed device (the runner marks it noisy and quarantined) stays
out of the rankings, a rerun is queued for it at once, and a quiet rerun puts it back with the
quiet figures; a rerun that is noisy again, or a quarantine for an implausible result, keeps it out."""

import pytest

from evaluation import queue
from evaluation.models import EvaluationJob
from evaluation.scheduling import Priority
from runner.host.evaluation import NOISY_QUARANTINE
from searches import selectors, services
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

H200 = "NVIDIA H200"


def result(median_ms, *, noisy=None, quarantine_reason=""):
    quarantined = bool(noisy or quarantine_reason)
    if noisy:
        quarantine_reason = f"{NOISY_QUARANTINE}, run it again on a quiet one: {noisy}"
    return {"status": "correct", "reason": "", "quarantined": quarantined, "quarantine_reason": quarantine_reason,
            "noisy": noisy, "seed": 7, "precision": "fp32", "compile": {"seconds": 0.2, "log": ""},
            "timing": {"median_ms": median_ms}, "speedup_vs_eager": 1.0 / median_ms,
            "baseline": {"eager_ms": 1.0, "compile_ms": None, "compile_mode": None},
            "environment": {"device_name": H200}}


def rerun_job(kernel):
    return kernel.jobs.get(purpose=EvaluationJob.Purpose.RERUN, status=EvaluationJob.Status.QUEUED)


def ranked_names(problem):
    return [k.name for board in selectors.leaderboard(problem=problem) for k in board["ranked"]]


@pytest.fixture
def noisy_kernel():
    problem = d.problem(name="Softmax")
    kernel = d.kernel(problem=problem, status="pending", run=False, name="busy host")
    services.kernel_record_verdict(kernel=kernel, job=queue.enqueue_kernel(kernel),
                                   result=result(0.9, noisy="pid 4242 used the GPU (SM 87%)"))
    kernel.refresh_from_db()
    return problem, kernel


def test_a_noisy_timing_is_kept_out_of_rankings_and_queues_its_rerun(noisy_kernel):
    problem, kernel = noisy_kernel
    assert (kernel.status, kernel.quarantined) == ("correct", True)
    assert kernel.runs.get().noisy_reason == "pid 4242 used the GPU (SM 87%)"
    assert ranked_names(problem) == []
    assert rerun_job(kernel).priority == Priority.SEARCH  # the system asked: search work, no cap


def test_a_quiet_rerun_puts_it_back_with_the_quiet_figures(noisy_kernel):
    problem, kernel = noisy_kernel
    services.kernel_record_verdict(kernel=kernel, job=rerun_job(kernel), result=result(0.5))
    kernel.refresh_from_db()
    assert (kernel.quarantined, kernel.verified, kernel.median_ms) == (False, False, 0.5)
    assert ranked_names(problem) == ["busy host"]


def test_a_noisy_rerun_keeps_it_out_and_queues_nothing_more(noisy_kernel):
    problem, kernel = noisy_kernel
    services.kernel_record_verdict(kernel=kernel, job=rerun_job(kernel), result=result(0.6, noisy="clocks throttled"))
    kernel.refresh_from_db()
    assert kernel.quarantined and ranked_names(problem) == []
    assert not kernel.jobs.filter(status=EvaluationJob.Status.QUEUED).exists()


def test_an_implausible_result_is_not_released_by_a_rerun():
    problem = d.problem(name="Softmax")
    kernel = d.kernel(problem=problem, status="pending", run=False, name="too fast")
    services.kernel_record_verdict(kernel=kernel, job=queue.enqueue_kernel(kernel),
                                   result=result(0.01, quarantine_reason="faster than the bandwidth allows"))
    assert not kernel.jobs.filter(purpose=EvaluationJob.Purpose.RERUN).exists()
    rerun = services.kernel_request_rerun(kernel=kernel, user=d.user())
    services.kernel_record_verdict(kernel=kernel, job=rerun, result=result(0.01))
    kernel.refresh_from_db()
    assert kernel.quarantined and ranked_names(problem) == []


def test_a_quarantine_on_a_degenerate_problem_names_the_problem_first():
    problem = d.problem(name="Zeros")
    problem.validation = {**(problem.validation or {}), "degenerate": "its output is all zeros for every input"}
    problem.save()
    kernel = d.kernel(problem=problem, status="pending", run=False, name="writes zeros")
    services.kernel_record_verdict(kernel=kernel, job=queue.enqueue_kernel(kernel), result=result(
        0.01, quarantine_reason="566x faster than eager: over 10x needs a person's review"))
    reason = kernel.runs.get().quarantine_reason
    assert reason.startswith("the problem itself is degenerate (its output is all zeros for every input); 566x")
