"""The no-privilege profile of a correct CUDA kernel (runner/inside/kernelattrs.py, runner/common/roofline.py).
Run on a GPU host: python3 -m pytest -p no:django tests/runner/test_gpu_profile.py -m gpu"""

import pytest

from runner.common import roofline

from . import sources

pytestmark = pytest.mark.gpu

SOFTMAX = sources.cuda_softmax_problem(256, 4096)
LABELS = {"memory-bound", "compute-bound", "latency- or launch-bound", "occupancy-limited"}


def test_cupy_kernel_profile_has_its_build_and_rates(cuda_pool):
    result = cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=1)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")
    profile = result["profile"]
    main = profile["kernels"][0]
    assert main["name"] == "softmax_rows" and main["launches"] == 1, profile
    assert main["block"] == [512, 1, 1] and main["grid"] == [256, 1, 1]
    assert 8 <= main["registers"] <= 255 and main["shared_bytes"] >= 256  # two __shared__ float[32]
    assert main["local_bytes"] == 0  # no spills, read from cupy's function attributes
    assert 0 < main["occupancy"] <= 1 and main["occupancy_limiter"]
    assert main["waves"] == pytest.approx(256 / (132 * roofline.occupancy(
        threads=512, registers=main["registers"], shared=main["shared_bytes"],
        device={"warp_size": 32, "max_threads_per_sm": 2048, "registers_per_sm": 65536,
                "shared_mem_per_sm": 233472})["blocks_per_sm"]), rel=0.01)
    assert profile["bandwidth_gbs"] > 0 and 0 < profile["bandwidth_fraction"] < 1.2
    assert profile["bottleneck"] in LABELS and profile["why"]
    assert profile["counters"]


TRITON_ADD = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        add_one[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
'''
ADD_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x + 1.0


def get_inputs():
    return [torch.randn(1 << 24)]


def get_init_inputs():
    return []
'''


def test_triton_kernel_profile_reads_its_spills(cuda_pool):
    result = cuda_pool.evaluate(ADD_PROBLEM, TRITON_ADD, seed=2)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")
    main = result["profile"]["kernels"][0]
    assert main["name"].startswith("add_one") and main["registers"] > 0
    assert main["local_bytes"] == 0  # Triton's n_spills of its compiled kernel
    assert result["profile"]["bottleneck"] in LABELS


def test_a_profile_on_demand_reads_the_counters_or_says_why_not(cuda_pool):
    """Nsight Compute in the candidate's sandbox (runner/inside/ncuprofile.py): the counters of the kernel's
    one profiled call, or the reason this host's sandbox cannot read them; the verdict is the same either way."""
    result = cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=1, counters=True)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")
    profile = result["profile"]
    print("counter profile:", profile["counters"])
    if profile.get("counter_kernels"):
        main = profile["counter_kernels"][0]
        assert main["name"].startswith("softmax_rows") and main["duration_us"] > 0, main
        assert 0 < main["dram_pct"] <= 100 and 0 < main["occupancy_pct"] <= 100 and main["stalls"], main
        assert profile["counters"].startswith("Nsight Compute")
        if max(main["dram_pct"], main.get("sm_pct") or 0) >= 100 * roofline.NEAR_CEILING:  # the counters' word
            assert profile["bottleneck"] in ("memory-bound", "compute-bound"), (profile["bottleneck"], profile["why"])
    else:
        assert profile["counters"].startswith(roofline.COUNTERS_UNAVAILABLE), profile["counters"]
    assert "counter_kernels" not in cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=2)["profile"]
