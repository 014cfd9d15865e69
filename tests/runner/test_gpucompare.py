"""The GPU's one-pass comparison (runner/common/gpucompare.py) gives PyTorch's answer bit for bit."""

import math
import zlib

import pytest
import torch

from runner.common import gpucompare, verify

pytestmark = pytest.mark.gpu

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


def _pair(x_dtype, t_dtype, where: str, n: int = 100_003):
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"{x_dtype}{t_dtype}{where}".encode()))
    t = torch.randn(n, dtype=torch.float64, device="cuda", generator=gen) * 10
    t[::97] = 0.0  # zero truths: the ratio's denominator is atol alone
    x = t + torch.randn(n, dtype=torch.float64, device="cuda", generator=gen) * 1e-3
    x[::13] = t[::13]  # exact matches
    if where == "nan":
        x[n // 2] = math.nan
    elif where == "inf":
        x[-1] = -math.inf
    elif where == "matched":  # a non-finite truth matched exactly: compared on the finite rest
        t[5], x[5], t[9], x[9] = math.inf, math.inf, math.nan, math.nan
    elif where == "unmatched":
        t[5], x[5] = math.inf, 3.0
    elif where == "all_non_finite":
        t[:], x[:] = math.nan, math.nan
    return x.to(x_dtype), t.to(t_dtype)


@pytest.mark.parametrize("x_dtype", DTYPES)
@pytest.mark.parametrize("t_dtype", DTYPES)
def test_every_dtype_pair_gives_pytorchs_answer_bit_for_bit(x_dtype, t_dtype):
    assert gpucompare.prepare()
    for where in ("plain", "nan", "inf", "matched", "unmatched", "all_non_finite"):
        x, t = _pair(x_dtype, t_dtype, where)
        for atol, rtol in ((1e-4, 1e-4), (1e-2, 1e-2), (0.0, 0.0), (1e-5, 0.0)):
            fused = gpucompare.err_ratio(x, t, atol, rtol)
            assert fused is not None
            assert fused == verify.err_ratio_torch(x, t, atol, rtol), (where, atol, rtol)
        assert (fused[0] == math.inf) == (where in ("nan", "inf", "unmatched")), where


def test_what_it_does_not_take_goes_pytorchs_way():
    t = torch.randn(64, 32, dtype=torch.float64, device="cuda")
    x = t.float()
    assert gpucompare.err_ratio(x.t(), t.t(), 1e-4, 1e-4) is None  # strided
    assert gpucompare.err_ratio(x.to(torch.int64), t.to(torch.int64), 0.0, 0.0) is None  # integers
    assert gpucompare.err_ratio(x.cpu(), t.cpu(), 1e-4, 1e-4) is None
    assert verify.err_ratio(x.t(), t.t(), 1e-4, 1e-4) == verify.err_ratio_torch(x.t(), t.t(), 1e-4, 1e-4)
    assert gpucompare.err_ratio(x[:0], t[:0], 1e-4, 1e-4) == (0.0, 0.0)


def test_a_large_output_is_compared_in_one_pass_without_temporaries():
    truth = torch.randn(1 << 28, dtype=torch.float64, device="cuda")
    out = truth.float()
    out[-1] += 1.0  # the worst element last: every block reached
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated()
    fused = gpucompare.err_ratio(out, truth, 1e-4, 1e-4)
    extra = torch.cuda.max_memory_allocated() - held
    assert fused == verify.err_ratio_torch(out, truth, 1e-4, 1e-4)
    assert fused[0] > 1.0 and extra < (1 << 20)
