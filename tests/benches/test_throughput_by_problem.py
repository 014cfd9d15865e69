"""The evaluator's per-problem table after a run (`bench_run`, scripts/gpu_run.sh): besides the counts
and device times, why a problem got no correct kernel and which jobs were handed back, from the rows."""

import pytest

from benches import throughput
from evaluation.models import EvaluationJob
from searches.models import BenchmarkRun
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

OOM = "out of memory while comparing the outputs: CUDA out of memory. Tried to allocate 12.00 GiB."
BUSY = ("the worker's device could not run it (an infrastructure failure, not a verdict): the evaluation ran out "
        "of device memory 3 times within its own share")


def test_a_problem_without_a_correct_kernel_says_why_and_what_was_handed_back():
    relu, gelu = d.problem(name="ReLU"), d.problem(name="GELU")
    searches = [d.search(problem=relu), d.search(problem=gelu)]
    d.kernel(problem=relu, search=searches[0])
    d.kernel(problem=relu, search=searches[0], status="incorrect", reason="wrong")
    for reason in ("first", OOM):
        kernel = d.kernel(problem=gelu, search=searches[1], status="oom", run=False)
        BenchmarkRun.objects.create(kernel=kernel, purpose="search", status="oom", reason=reason)
    # as the queue makes them: a candidate's job names its kernel, not the search
    EvaluationJob.objects.create(problem=gelu, kernel=kernel, status="done", last_error=BUSY)
    elsewhere = d.kernel(problem=gelu, search=d.search(problem=gelu), status="oom", run=False)
    EvaluationJob.objects.create(problem=gelu, kernel=elsewhere, status="done", last_error="another run's")
    EvaluationJob.objects.create(problem=relu, search=searches[0], purpose="tool", status="done", last_error="")

    report = throughput.by_problem(searches, wall_s=60.0)
    rows = {row["problem"]: row for row in report["problems"]}
    assert (rows["ReLU"]["judged"], rows["ReLU"]["correct"], rows["ReLU"]["retried"]) == (2, 1, 0)
    assert rows["ReLU"]["why"] is None  # one correct kernel is enough
    assert (rows["GELU"]["judged"], rows["GELU"]["correct"], rows["GELU"]["retried"]) == (2, 0, 1)
    assert rows["GELU"]["why"] == f"oom: {OOM}"  # the last verdict
    table = throughput.by_problem_table(report)
    assert f"no correct kernel, GELU: oom: {OOM}" in table
    assert f"handed back (1 job(s)), GELU: {BUSY}" in table
    assert not any("ReLU:" in line for line in table)
