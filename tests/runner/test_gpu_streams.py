"""Side streams on the GPU: the launch accounting (runner/common/launches.py) refuses work on another stream
that forward returned without waiting for, and lets through side-stream work it waited for (the host
synchronized, or torch's stream waited on the side one), as the field's kernels do. The static checks
(runner/host/sidestreams.py) leave both to the run whenever the module waits for anything.
Run on a GPU host: python3 -m pytest -p no:django -p no:playwright -p no:cacheprovider tests/runner -m gpu"""

import pytest

from runner.common import findings

from .test_gpu_judging import PROBLEM

pytestmark = pytest.mark.gpu

# An affine kernel launched on a side stream; {spin}: clock cycles block 0 spins first (so the kernel
# surely outlives forward's return), {launch} and {after}: how it is launched and what forward does next.
SIDE = '''
import cupy as cp
import torch
import torch.nn as nn

KERNEL = cp.RawKernel(r"""
extern "C" __global__ void affine(const float* x, float* y, float a, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long start = clock64();
        while (clock64() - start < {spin}LL) {}
    }
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a + 1.0f;
}
""", "affine")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        self.side.wait_stream(torch.cuda.current_stream())  # the inputs are ready before the side stream reads
        with torch.cuda.stream(self.side):
            with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                KERNEL(((n + 255) // 256,), (256,), (cp.uint64(x.data_ptr()), cp.uint64(out.data_ptr()),
                       cp.float32(2.0), cp.int64(n)))
        {after}
        return out
'''


def side_kernel(after: str, spin: int = 0) -> str:
    return SIDE.replace("{after}", after).replace("{spin}", str(spin))


@pytest.mark.parametrize("after", ["torch.cuda.current_stream().wait_stream(self.side)",
                                   "torch.cuda.synchronize()", "self.side.synchronize()"])
def test_side_stream_work_forward_waits_for_is_accepted(cuda_pool, after):
    result = cuda_pool.evaluate(PROBLEM, side_kernel(after), seed=11)
    assert result["status"] == "correct", result["reason"]


def test_side_stream_work_nothing_waits_for_is_refused_at_run_time(cuda_pool):
    """The module waits for something (an unrelated synchronize in __init__), so the static checks leave it
    to the run; the kernel, still spinning when forward returns, is caught by the accounting."""
    source = side_kernel("pass", spin=20_000_000).replace(
        "self.side = torch.cuda.Stream()", "self.side = torch.cuda.Stream()\n        torch.cuda.synchronize()")
    result = cuda_pool.evaluate(PROBLEM, source, seed=12)
    assert result["status"] == "rejected", result["reason"]
    assert result["reason_code"] == findings.RULE
    assert "affine on stream" in result["reason"] and "returned before it finished" in result["reason"]
