"""The profile (runner/common/roofline.py) of a round's fastest correct kernels reaches the next ideas
requests, as the local fake Messages API received them from the real `anthropic` SDK; slower
kernels of the round go without."""

import pytest

from evaluation import leases
from runner.common import roofline
from searches import services
from searches.engine import loop
from tests.fakes.anthropic_server import task_of

from .test_engine import problem, runner_verdict  # noqa: F401  (fixture)
from .test_engine_llm import fake, kicks, start  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads

H200 = {"name": "NVIDIA H200", "sm_count": 132, "warp_size": 32, "max_threads_per_sm": 2048,
        "registers_per_sm": 65536, "shared_mem_per_sm": 233472}


def profiled(kernel, median_ms):
    verdict = runner_verdict("correct", median_ms=median_ms, device_name="NVIDIA H200")
    verdict["profile"] = roofline.profile(
        device="cuda", device_facts=H200, median_ms=median_ms, flops=None, min_bytes=4.25e12 * median_ms / 1000 * 0.8,
        precision="fp32", kernels=[{"name": f"softmax_rows_{kernel.id}", "registers": 40, "shared_bytes": 256,
                                    "local_bytes": 0, "block": [512, 1, 1], "grid": [4096, 1, 1],
                                    "launches": 1, "time_share": 1.0}])
    return verdict


def shown(seen) -> str:
    """All a request shows the model: the bank (in the system blocks) and the user turn."""
    return seen.system_text + seen.user_text


def judge_each(median_for):
    while (job := leases.claim("test-worker", "cpu")) is not None:
        services.kernel_record_verdict(kernel=job.kernel, job=job, result=profiled(job.kernel, median_for(job.kernel)))


@pytest.mark.slow
def test_the_top_kernels_profile_reaches_the_next_ideas_call_and_no_other(problem, fake):
    search = start(problem, rounds=2, kernels_per_idea=2, parents_per_round=2, profiled_kernels=1)
    loop.advance(search.id)
    judge_each(lambda k: 1.0)
    loop.advance(search.id)  # round 1: ideas for the seed, which is its round's top kernel
    [first] = [shown(s) for s in fake.requests if task_of(s) == "ideas"]
    assert "Its profile (the runner's, from the build and the timings):" in first
    assert "bottleneck: memory-bound (it moves the problem's bytes at 80% of the measured bandwidth)" in first
    assert ("40 registers/thread, 256 B shared/block, 0 B local/thread (spills), block [512, 1, 1], grid [4096, 1, 1], "
            "75% theoretical occupancy (limited by registers)") in first  # 3 blocks of 20480 registers
    assert f"counters: {roofline.COUNTERS_UNAVAILABLE}" in first

    judge_each(lambda k: 0.5 if k.variant == 0 else 0.8)
    loop.advance(search.id)  # round 2: one ideas call per parent, the faster profiled only
    fast, slow = sorted(search.kernels.filter(round=1), key=lambda k: k.median_ms)
    round_two = [shown(s) for s in fake.requests if task_of(s) == "ideas"][1:]
    assert len(round_two) == 2
    assert all(f"softmax_rows_{fast.id}" in text and f"softmax_rows_{slow.id}" not in text for text in round_two)
