"""On a GPU, a round's profiled parents are rerun with Nsight Compute's counters before their ideas
call (searches/engine/evidence.py), and the counters reach that call, as the local fake Messages API
received it from the real `anthropic` SDK. The starting kernel's come with its own verdict, and the
likely next parents' are asked for while a round waits for its last verdicts. A failed rerun lets the
call go without them; on the CPU, and for the playbook (which reads no profile), nothing waits. (No GPU
here: the test worker records the verdicts a GPU evaluator would.)"""

import pytest
from django.db import transaction

from evaluation import leases, queue
from evaluation.models import EvaluationJob
from runner.common import roofline
from searches import services
from searches.engine import loop
from tests.fakes.anthropic_server import task_of

from .test_engine import problem  # noqa: F401  (fixture)
from .test_engine_llm import fake, kicks, start  # noqa: F401  (fixtures)
from .test_engine_llm_profile import profiled, shown

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads

# What the counter profile of the softmax kernel read on the H100 (2026-12-06, tests/runner/test_gpu_profile.py)
COUNTERS = ("Nsight Compute, one call, clocks as found: softmax_rows (8.064 us): SM 26% and DRAM 16% of peak, achieved "
            "occupancy 45%, tensor pipes dmma 0%, hmma 1%, imma 0%; top stalls (cycles per issue) long_scoreboard 11, "
            "wait 1.9, barrier 1.4")


def judge(device: str, counters: str | None = None) -> int:
    judged = 0
    while (job := leases.claim("test-worker", device)) is not None:
        verdict = profiled(job.kernel, 1.0)
        if job.options.get("counters"):
            verdict["profile"]["counters"] = counters
        services.kernel_record_verdict(kernel=job.kernel, job=job, result=verdict)
        judged += 1
    return judged


def ideas_requests(fake) -> list[str]:
    return [shown(s) for s in fake.requests if task_of(s) == "ideas"]


def counter_reruns(search):
    return EvaluationJob.objects.filter(kernel__search=search, purpose=EvaluationJob.Purpose.RERUN,
                                        options__counters=True)


def judge_one(median_ms: float, counters: str | None = None):
    job = leases.claim("test-worker", "cuda")
    verdict = profiled(job.kernel, median_ms)
    if job.options.get("counters"):
        verdict["profile"]["counters"] = counters
    services.kernel_record_verdict(kernel=job.kernel, job=job, result=verdict)
    return job


def round_two_waiting(problem, fake):
    """A GPU search whose round 2 has begun, its parent (round 1's faster kernel, judged after the engine
    last looked) waiting for its counter rerun."""
    search = start(problem, device="cuda", profiled_kernels=1, rounds=2)
    loop.advance(search.id)
    judge("cuda", COUNTERS)  # the starting kernel
    loop.advance(search.id)  # round 1: its ideas call and kernel
    parent = judge_one(0.5).kernel
    loop.advance(search.id)  # round 2: the parent's counters first, no ideas call yet
    assert counter_reruns(search).filter(kernel=parent).count() == 1 and len(ideas_requests(fake)) == 1
    return search


def test_the_starting_kernels_counters_come_with_its_verdict(problem, fake):
    search = start(problem, device="cuda", profiled_kernels=1)
    loop.advance(search.id)
    [job] = queue.pending_for_search(search.id)
    assert job.options.get("counters") is True
    judge("cuda", COUNTERS)
    loop.advance(search.id)  # round 1's ideas call goes at once: no rerun to wait for
    [ideas] = ideas_requests(fake)
    assert f"counters: {COUNTERS}" in ideas and counter_reruns(search).count() == 0


def test_on_the_cpu_the_starting_kernel_reads_no_counters(problem, fake):
    search = start(problem, device="cpu", profiled_kernels=1)
    loop.advance(search.id)
    [job] = queue.pending_for_search(search.id)
    assert "counters" not in job.options


def test_a_gpu_parents_counters_are_read_before_its_ideas_call(problem, fake):
    search = round_two_waiting(problem, fake)
    loop.advance(search.id)
    assert len(ideas_requests(fake)) == 1
    assert judge("cuda", COUNTERS + " (round 2)") == 1  # the rerun, with its counters
    loop.advance(search.id)
    assert f"counters: {COUNTERS} (round 2)" in ideas_requests(fake)[1]
    assert counter_reruns(search).count() == 1  # read once


def test_a_failed_counter_rerun_lets_the_ideas_call_go_without_them(problem, fake):
    search = round_two_waiting(problem, fake)
    job = leases.claim("test-worker", "cuda")
    with transaction.atomic():
        queue.fail(job, "the worker died three times running it")
    loop.advance(search.id)
    assert f"counters: {roofline.COUNTERS_UNAVAILABLE}" in ideas_requests(fake)[1]


def test_on_the_cpu_nothing_waits_for_counters(problem, fake):
    search = start(problem, device="cpu", profiled_kernels=1)
    loop.advance(search.id)
    judge("cpu")
    loop.advance(search.id)
    assert counter_reruns(search).count() == 0 and len(ideas_requests(fake)) == 1


def test_the_playbook_reads_no_profile_so_nothing_waits_for_counters(problem):
    search = start(problem, device="cuda", proposer="playbook", profiled_kernels=1)
    loop.advance(search.id)
    assert judge("cuda") == 1
    loop.advance(search.id)
    assert counter_reruns(search).count() == 0 and search.ideas.filter(round=1).exists()


def test_the_likely_next_parents_counters_are_read_while_the_round_ends(problem, fake):
    """While the round waits for its last verdict, the kernel that would be the next round's parent is
    rerun with counters, so the next round's ideas call for it does not wait."""
    search = start(problem, device="cuda", profiled_kernels=1, rounds=2, kernels_per_idea=2, repair_attempts=0)
    loop.advance(search.id)
    judge("cuda", COUNTERS)  # the starting kernel, with its counters
    loop.advance(search.id)  # round 1: its ideas call and two kernels
    job = judge_one(0.5)
    assert counter_reruns(search).filter(kernel=job.kernel).count() == 0
    loop.advance(search.id)  # the other kernel still being judged
    assert counter_reruns(search).filter(kernel=job.kernel).count() == 1
    assert judge("cuda", COUNTERS) == 2  # the other kernel, then the early rerun
    loop.advance(search.id)  # round 2 starts: its parent's counters are read already
    assert search.kernels.filter(round=2).exists() and len(ideas_requests(fake)) == 2
    assert counter_reruns(search).count() == 1
