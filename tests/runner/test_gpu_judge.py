"""The trusted judge on the GPU: forged low times are caught by the parent's batch clock, and an
honest kernel whose forward is bound by host-side launches is not (its batches are queued behind a
device-side wait, so the host's launch gaps do not count against it).
Run on a GPU host: python3 -m pytest -p no:django -p no:playwright -p no:cacheprovider tests/runner -m gpu"""

from pathlib import Path

import pytest

from . import sources

pytestmark = pytest.mark.gpu

ATTACKS = Path(__file__).with_name("attacks")

# Eight launches of a ~3 µs kernel per forward, with Python between them: tens of µs of host work
# for each few µs of device work.
LAUNCH_BOUND = sources.CUPY_SOFTMAX_KERNEL.replace('''            KERNEL((x.shape[0],), (512,), (cupy.uint64(x.data_ptr()), cupy.uint64(y.data_ptr()),
                                          cupy.int64(x.shape[1])))''', '''            for _ in range(8):  # the same rows each time: idempotent
                KERNEL((x.shape[0],), (512,), (cupy.uint64(x.data_ptr()), cupy.uint64(y.data_ptr()),
                                              cupy.int64(x.shape[1])))''')


def batch_record(result: dict) -> dict:
    return next(m for m in result["measurements"] if m["what"] == "batch")


def test_forged_low_times_are_rejected_on_a_quiet_device(cuda_pool):
    # ~0.1 ms a call: well past the 20 µs that the tolerance leaves to any kernel
    problem = (ATTACKS / "forge_timing.py").read_text().replace("torch.randn(64, 1024)", "torch.randn(8192, 8192)")
    result = cuda_pool.evaluate(problem, sources.CUPY_SOFTMAX_KERNEL, seed=1)
    assert result["status"] in ("rejected", "correct"), result["reason"]
    batch = batch_record(result)
    if result["status"] == "correct":  # only where NVML saw the device disturbed, or the host kept the batches
        # from a CPU: noisy, out of every ranking
        assert (batch["disturbance"] or "on a busy host" in result["noisy"]) and result["quarantined"], result
    else:
        assert "below what the parent's clock allows" in result["reason"], result["reason"]
    assert batch["slope_ms"] > batch["reported_ms"] * 5


def test_a_launch_bound_honest_kernel_is_not_refused(cuda_pool):
    assert LAUNCH_BOUND != sources.CUPY_SOFTMAX_KERNEL
    result = cuda_pool.evaluate(sources.SOFTMAX_PROBLEM, LAUNCH_BOUND, seed=2)
    assert result["status"] == "correct", result["reason"]
    batch = batch_record(result)
    assert batch["slope_ms"] <= batch["reported_ms"] * 1.1 + 0.02, batch


def test_the_judge_decides_correctness_on_the_gpu(cuda_pool):
    result = cuda_pool.evaluate(sources.cuda_softmax_problem(), sources.CUPY_SOFTMAX_KERNEL, seed=3)
    assert result["status"] == "correct", result["reason"]
    assert [r["trials"] for r in result["correctness"]["per_distribution"]] == [3, 1, 1]
    assert result["phases"]["judge_s"] > 0
