"""Backend flags a kernel sets (cudnn.benchmark, TF32, matmul precision) are allowed, and their own
effect is never the kernel's credit: eager is timed again under the kernel's flags, in its sandbox,
and the faster of the two eager times is the one its speedup is measured against."""

import pytest

from runner.host import evaluation

from . import sources


def test_the_faster_eager_counts_and_a_slower_one_changes_nothing():
    def speedup(eager_flags_ms):
        result = {"timing": {"median_ms": 1.0}, "baseline": {"eager_ms": 4.0, "compile_ms": None}, "paired": None,
                  "environment": {}, "flag_baseline": {"flags": {"cudnn.benchmark": True}, "eager_ms": eager_flags_ms}}
        evaluation._speedups(result, {"flops": None, "min_bytes": None}, "cuda")
        return result["speedup_vs_eager"], result["baseline"]["eager_flags_ms"]

    assert speedup(2.0) == (2.0, 2.0)  # the flag made eager twice as fast: the kernel is 2x, not 4x
    assert speedup(8.0) == (4.0, 8.0)  # an eager made slower under the flags (or a lie) gains nothing


@pytest.mark.slow
def test_a_kernel_that_sets_a_flag_gets_eager_timed_under_it(cpu_pool):
    flagged = sources.SILU_KERNEL.replace("import torch\n", "import torch\ntorch.set_float32_matmul_precision('high')\n",
                                          1)
    assert flagged != sources.SILU_KERNEL
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, flagged, seed=3)
    assert result["status"] == "correct", result["reason"]
    # 'high' is TF32 for matmuls: torch turns the matmul flag on with it
    assert result["baseline"]["flags"] == {"float32_matmul_precision": "high", "cuda.matmul.allow_tf32": True}
    assert result["baseline"]["eager_flags_ms"] > 0
    assert result["speedup_vs_eager"] <= result["baseline"]["eager_flags_ms"] / result["timing"]["median_ms"] + 1e-9

    plain = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=3)
    assert plain["status"] == "correct", (plain["reason_code"], plain["reason"])
    assert "eager_flags_ms" not in plain["baseline"]


@pytest.mark.slow
def test_a_wrong_kernel_that_turned_tf32_on_is_told_so(cpu_pool):
    wrong = sources.SILU_KERNEL.replace("y[i] = x[i] / (1.0f + expf(-x[i]));", "y[i] = 2.0f * x[i];", 1)
    wrong = wrong.replace("import torch\n", "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", 1)
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, wrong, seed=3)
    assert result["status"] == "incorrect"
    assert "turned TF32 on" in result["reason"], result["reason"]
