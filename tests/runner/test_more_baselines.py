"""Baselines beside eager and torch.compile's default, timed by the runner in the problem's sandbox
as eager is: torch.compile's max-autotune runs on the CPU; reduce-overhead and CUDA graphs need CUDA
and are skipped here with the reason (their GPU test is marked `gpu`)."""

import pytest

from runner.host import baselines
from runner import RunnerError

from . import sources


def test_unknown_baselines_are_refused():
    assert baselines.extra(["cudagraph", "max-autotune"]) == ("max-autotune", "cudagraph")
    with pytest.raises(RunnerError, match="baselines must be among"):
        baselines.extra(["max-speed"])


@pytest.mark.slow  # max-autotune compiles (tens of seconds on a CPU)
def test_max_autotune_is_timed_and_cuda_only_baselines_are_skipped_on_the_cpu(cpu_pool):
    more = ["reduce-overhead", "max-autotune", "cudagraph"]
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=3, more_baselines=more)
    assert result["status"] == "correct", result["reason"]
    rows = result["baseline"]["more"]
    assert list(rows) == more
    assert rows["max-autotune"]["ms"] > 0 and rows["max-autotune"]["mean_ms"] > 0
    assert rows["max-autotune"]["skipped"] is None
    assert rows["cudagraph"] == {"ms": None, "mean_ms": None, "skipped": "CUDA graphs need a CUDA device"}
    assert "need a CUDA device" in rows["reduce-overhead"]["skipped"]
    speedups = result["speedup_vs_more"]
    assert speedups["max-autotune"] == pytest.approx(rows["max-autotune"]["ms"] / result["timing"]["median_ms"])
    assert speedups["cudagraph"] is None and speedups["reduce-overhead"] is None
    # measured under the same rules as eager: each is a measurement the parent watched
    assert {m["what"] for m in result_measurements(cpu_pool)} >= {"eager", "max-autotune"}


def result_measurements(pool):
    """The validation with these baselines again, from the cache (stored only when nothing was noisy)."""
    return pool.validate(sources.SILU_PROBLEM, seed=3, more_baselines=["max-autotune"])["measurements"]


@pytest.mark.gpu
def test_cuda_graph_and_compile_modes_are_timed_on_the_gpu(cuda_pool):
    more = ["reduce-overhead", "max-autotune", "cudagraph"]
    result = cuda_pool.validate(sources.SILU_PROBLEM, seed=3, more_baselines=more)
    assert result["status"] == "ok", result["reason"]
    for kind in more:
        row = result["baseline"]["more"][kind]
        assert row["skipped"] is None and row["ms"] > 0, (kind, row)
    assert {m["what"] for m in result["measurements"]} >= {"eager", *more}
