"""Judging other people's kernels on the GPU: Triton as a first-class format, driver-level launch
accounting (runner/common/launches.py), and the cheat classes of 2026's red-teaming of GPU leaderboards:
a persisting L2 window, a lazy output, a patched Event.elapsed_time, correct-then-wrong results.
Run on a GPU host: python3 -m pytest -p no:django -p no:playwright -p no:cacheprovider tests/runner -m gpu"""

import ctypes

import pytest

from runner.common import findings

pytestmark = pytest.mark.gpu

PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0

def get_inputs():
    return [torch.randn(4096, 1024)]

def get_init_inputs():
    return []
'''

# An honest cupy kernel on torch's stream; {stream} and {result} let each case bend one thing.
CUPY = '''
import cupy as cp
import torch
import torch.nn as nn

KERNEL = cp.RawKernel(r"""
extern "C" __global__ void affine(const float* x, float* y, float a, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * a + 1.0f;
}
""", "affine")
{extra}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        with cp.cuda.ExternalStream({stream}):
            KERNEL(((n + 255) // 256,), (256,), (cp.uint64(x.data_ptr()), cp.uint64(out.data_ptr()),
                   cp.float32({scale}), cp.int64(n)))
        return {result}
'''


def cupy_kernel(extra="", stream="torch.cuda.current_stream().cuda_stream", scale="2.0", result="out"):
    source = CUPY.replace("{extra}", extra)
    for name, value in (("{stream}", stream), ("{scale}", scale), ("{result}", result)):
        source = source.replace(name, value)
    return source


def test_honest_cupy_kernel_passes_the_launch_accounting(cuda_pool):
    result = cuda_pool.evaluate(PROBLEM, cupy_kernel(), seed=1)
    assert result["status"] == "correct", result["reason"]
    assert result["reason_code"] is None


TRITON = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0 + 1.0{broken}, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        affine_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
'''


def test_triton_kernel_is_accepted(cuda_pool):
    result = cuda_pool.evaluate(PROBLEM, TRITON.format(broken=""), seed=2)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")


def test_triton_compile_error_is_a_compile_error(cuda_pool):
    result = cuda_pool.evaluate(PROBLEM, TRITON.format(broken=" + tl.no_such_function(x_ptr)"), seed=3)
    assert result["status"] == "compile_error", result["reason"] + result.get("log", "")
    assert "no_such_function" in result["compile"]["log"]


def test_side_stream_launch_is_refused_naming_stream_and_kernel(cuda_pool):
    """A stream made through cupy's runtime API, out of the static checks' view: the activity
    records show the kernel on it."""
    source = cupy_kernel(extra="SIDE = cp.cuda.runtime.streamCreateWithFlags(1)",
                         stream="SIDE or torch.cuda.current_stream().cuda_stream")
    # block 0 spins first, so the kernel surely outlives forward's return (nothing waits for it)
    source = source.replace("    long long i =", "    if (blockIdx.x == 0 && threadIdx.x == 0) { long long t = clock64(); "
                                                "while (clock64() - t < 20000000LL) {} }\n    long long i =", 1)
    result = cuda_pool.evaluate(PROBLEM, source, seed=4)
    assert result["status"] == "rejected", result["reason"]
    assert "affine on stream" in result["reason"] and "not on the timed stream" in result["reason"]


def test_lazy_tensor_subclass_output_is_refused(cuda_pool):
    extra = "Lazy = type('Lazy', (torch.Tensor,), {})\nAS = lambda t, cls: t.as_subclass(cls)"
    result = cuda_pool.evaluate(PROBLEM, cupy_kernel(extra=extra, result="AS(out, Lazy)"), seed=5)
    assert result["status"] == "rejected", result["reason"]
    assert "not a plain torch.Tensor" in result["reason"]


def test_patched_event_elapsed_time_is_refused(cuda_pool):
    extra = ("PATCH = lambda owner, name, value: setattr(owner, name, value)\n"
             "PATCH(torch.cuda.Event, 'elapsed_time', lambda self, end: 1e-4)")
    result = cuda_pool.evaluate(PROBLEM, cupy_kernel(extra=extra), seed=6)
    assert result["status"] == "rejected", result["reason"]
    assert "elapsed_time" in result["reason"]


def test_correct_then_wrong_is_incorrect(cuda_pool):
    """Right on correctness, warm-up and the first timed calls (fewer than the 100 every measurement makes), then wrong."""
    result = cuda_pool.evaluate(PROBLEM, cupy_kernel(scale="2.0 if self.calls < 120 else 2.5"), seed=7)
    assert result["status"] == "incorrect", result["reason"]
    assert "timed call" in result["reason"]


def test_named_persisting_l2_window_is_refused(cuda_pool):
    extra = ('LIB = None  # the runtime call, as ctypes would name it\n'
             'def pin(stream, ptr, size):\n    return LIB.cudaStreamSetAttribute(stream, 1, ptr, size)')
    result = cuda_pool.evaluate(PROBLEM, cupy_kernel(extra=extra), seed=8)
    assert result["status"] == "rejected" and "persisting" in result["reason"], result["reason"]


def test_persisting_l2_carve_out_is_reset_between_timed_calls():
    """What a window hidden from the static checks meets: between timed calls the judge sets the
    persisting carve-out to zero and resets persisting lines (runner/inside/replay.py)."""
    import torch

    from runner.inside import replay

    torch.zeros(1, device="cuda")  # a current context
    driver = ctypes.CDLL("libcuda.so.1")
    driver.cuCtxSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]
    limit = ctypes.c_size_t()
    assert driver.cuCtxSetLimit(replay.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 30 * 1024 * 1024) == 0
    driver.cuCtxGetLimit(ctypes.byref(limit), replay.CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
    assert limit.value > 0
    replay.persisting_l2_reset("cuda")()
    driver.cuCtxGetLimit(ctypes.byref(limit), replay.CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
    assert limit.value == 0


def test_reason_codes_reach_the_verdict_on_the_gpu(cuda_pool):
    partial = cupy_kernel(extra="ACT = lambda t: t.clamp_min(0)", result="ACT(out)")
    result = cuda_pool.evaluate(PROBLEM, partial, seed=9)
    assert (result["status"], result["reason_code"]) == ("rejected", findings.PARTIAL), result["reason"]
