"""On the H200: the no-privilege profile of the playbook's fastest correct kernels on the catalog's
softmax, as the next ideas request shows it (proposers/prompts.py), with the counter check's answer."""

import pytest

from proposers import prompts
from proposers.base import KernelContext, ProblemContext
from runner.common import counters
from searches import catalog
from tests.playbook.test_playbook import all_kernels

PROBLEM = catalog.get("softmax-4096x65536")
LABELS = ("memory-bound", "compute-bound", "latency- or launch-bound", "occupancy-limited")


@pytest.mark.gpu
def test_the_top_playbook_kernels_profiles_reach_the_ideas_prompt(cuda_pool):
    problem = ProblemContext(name=PROBLEM.name, source=PROBLEM.source, device="cuda", family=PROBLEM.family)
    results = [(label, source, cuda_pool.evaluate(PROBLEM.source, source, seed=5))
               for label, source in all_kernels(problem)]
    correct = sorted((r for r in results if r[2]["status"] == "correct"), key=lambda r: r[2]["timing"]["median_ms"])
    assert len(correct) >= 2, [(label, r["status"], r["reason"]) for label, _, r in results]
    expected_counters = counters.status()
    for label, source, result in correct[:2]:
        profile = result["profile"]
        main = profile["kernels"][0]
        assert main["registers"] and main["shared_bytes"] is not None and main["block"] and main["grid"], profile
        assert main["local_bytes"] is not None  # cupy's attributes: spills and stack arrays
        assert 0 < main["occupancy"] <= 1 and profile["bandwidth_fraction"] > 0
        assert profile["bottleneck"] in LABELS
        assert profile["counters"] == expected_counters["note"]
        shown = prompts.kernel_block("parent_kernel", KernelContext(
            id=1, source=source, status="correct", median_ms=result["timing"]["median_ms"],
            profile=prompts.profile_text(profile)))
        assert f"bottleneck: {profile['bottleneck']}" in shown and "registers/thread" in shown
        assert "theoretical occupancy" in shown and "counters: " in shown
        print(f"\n{label}: {result['timing']['median_ms']:.4g} ms\n{prompts.profile_text(profile)}")
