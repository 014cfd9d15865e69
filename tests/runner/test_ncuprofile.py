"""The counters job (runner/inside/ncuprofile.py) through a real sandbox: on this CPU host there is no
ncu, so the profile must say why it has no counters and keep everything else it had."""

from runner.common import roofline
from runner.host import evaluation

from . import sources


def test_a_counters_job_without_nsight_compute_says_so_in_the_profile(cpu_pool):
    job = {"device": "cpu", "seed": 5, "problem_source": sources.SILU_PROBLEM, "kernel_source": sources.SILU_KERNEL}
    result = {"profile": {"bottleneck": None, "counters": "before"}}
    evaluation.add_counters(cpu_pool, job, result, timeout=120)
    assert result["profile"]["counters"].startswith(roofline.COUNTERS_UNAVAILABLE), result
    assert result["profile"]["counters"].endswith("Nsight Compute (ncu) is not on the sandbox's PATH")
    assert "counter_kernels" not in result["profile"] and result["profile"]["bottleneck"] is None
