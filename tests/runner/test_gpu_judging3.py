"""Judging, part 3, on the GPU (run by scripts/gpu_check.sh on the device): a fenced run's sandboxes
killed there too, KernelBench's degenerate level-2 problems named at full size, and cudnn.benchmark set
by a library-mode kernel timed against eager under the same flag."""

import threading
import time

import pytest

from runner import Cancelled

from . import sources
from .test_degenerate import KERNELBENCH

pytestmark = pytest.mark.gpu

SOFTMAX = sources.cuda_softmax_problem(256, 4096)

CONV = sources.CONV_PROBLEM

CONV_WITH_BENCHMARK = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.backends.cudnn.benchmark = True
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, padding=1)
    def forward(self, x):
        return F.conv2d(x, self.conv.weight, self.conv.bias, padding=1)
"""


def test_a_cancelled_gpu_run_stops_at_once(cuda_pool):
    cuda_pool.validate(SOFTMAX, timeout=300)
    spins = sources.CUPY_SOFTMAX_KERNEL + "\nwhile True:\n    pass\n"
    with cuda_pool.scope() as scope:
        threading.Timer(5, scope.cancel).start()
        began = time.monotonic()
        with pytest.raises(Cancelled):
            cuda_pool.evaluate(SOFTMAX, spins, timeout=300)
        assert time.monotonic() - began < 60
    assert cuda_pool.evaluate(SOFTMAX, sources.CUPY_SOFTMAX_KERNEL, seed=1)["status"] == "correct"


@pytest.mark.parametrize("name", ["80_Gemm_Max_Subtract_GELU.py", "83_Conv3d_GroupNorm_Min_Clamp_Dropout.py"])
def test_kernelbench_degenerate_problems_at_full_size(cuda_pool, name):
    result = cuda_pool.validate((KERNELBENCH / "level2" / name).read_text(), seed=0, timeout=300)
    assert result["status"] == "ok", result["reason"]
    assert "all zeros" in (result["degenerate"] or ""), result["degenerate"]


def test_cudnn_benchmark_is_timed_against_eager_under_it(cuda_pool):
    result = cuda_pool.evaluate(CONV, CONV_WITH_BENCHMARK, seed=1, allow_library=True)
    assert result["status"] == "correct", result["reason"]
    assert result["baseline"]["flags"] == {"cudnn.benchmark": True}
    eager = min(result["baseline"]["eager_ms"], result["baseline"]["eager_flags_ms"])
    assert result["speedup_vs_eager"] == pytest.approx(eager / result["timing"]["median_ms"])
