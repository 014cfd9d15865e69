"""Degenerate problems are named at validation: a trivial output (zeros, a constant, one input's
result reused) that passes the problem's own judging. Shrunk copies of KernelBench level 2's
problems 80 and 83 (tests/fixtures/kernelbench, MIT), whose outputs are zeros for every input,
beside honest problems that must not be flagged."""

import re
from pathlib import Path

import pytest

from . import sources

KERNELBENCH = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"


def shrunk(relative: str, sizes: dict[str, object]) -> str:
    """The fixture with its module-level sizes made small enough for a CPU test."""
    source = (KERNELBENCH / relative).read_text()
    for name, value in sizes.items():
        source, n = re.subn(rf"^{name} = .*$", f"{name} = {value}", source, flags=re.M)
        assert n == 1, name
    return source


GEMM_MAX_SUBTRACT_GELU = shrunk("level2/80_Gemm_Max_Subtract_GELU.py",
                                {"batch_size": 16, "in_features": 64, "out_features": 32})
CONV3D_GROUPNORM_MIN_CLAMP = shrunk("level2/83_Conv3d_GroupNorm_Min_Clamp_Dropout.py",
                                    {"batch_size": 2, "depth, height, width": "4, 8, 8"})

CONSTANT = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 0 + 3.0
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
"""

IGNORES_INPUT = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 16))
    def forward(self, x):
        return self.w + 0 * x.sum()
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
"""


ARGMAX = shrunk("level1/51_Argmax_over_a_dimension.py", {"batch_size": 4, "dim1": 64, "dim2": 63})

ARGMAX_KERNEL = sources._C_PRELUDE + '''
LIB = build(r"""
#include <stdint.h>
void argmax_dim1(const float *x, int64_t *y, int64_t b, int64_t n, int64_t m, int zeros) {
    for (int64_t i = 0; i < b; i++)
        for (int64_t k = 0; k < m; k++) {
            int64_t best = 0;
            for (int64_t j = 1; j < n && !zeros; j++)
                if (x[(i * n + j) * m + k] > x[(i * n + best) * m + k]) best = j;
            y[i * m + k] = best;
        }
}
""")
LIB.argmax_dim1.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int64] * 3 + [ctypes.c_int]
ZEROS = %d


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape[0], x.shape[2], dtype=torch.int64)
        LIB.argmax_dim1(x.data_ptr(), y.data_ptr(), x.shape[0], x.shape[1], x.shape[2], ZEROS)
        return y
'''

LARGE = "randn(2048, 2100)"  # 4.3 M elements: more than runner/common/sampling.py's SAMPLE


@pytest.mark.slow
@pytest.mark.parametrize("source, says", [
    (GEMM_MAX_SUBTRACT_GELU, "all zeros"),
    (CONV3D_GROUPNORM_MIN_CLAMP, "all zeros"),
    (CONSTANT, "constant (3)"),
    (IGNORES_INPUT, "does not depend on the input"),
    # outputs past the judge's sample size: compared at sampled positions, the same on every trial
    (CONSTANT.replace("randn(8, 16)", LARGE), "constant (3)"),
    (IGNORES_INPUT.replace("randn(8, 16)", LARGE), "does not depend on the input"),
], ids=["kernelbench-l2-80", "kernelbench-l2-83", "constant", "ignores-input", "constant-large", "ignores-input-large"])
def test_a_degenerate_problem_validates_and_is_named(cpu_pool, source, says):
    result = cpu_pool.validate(source, seed=0)
    assert result["status"] == "ok", result["reason"]
    assert result["degenerate"] and says in result["degenerate"], result["degenerate"]


@pytest.mark.slow
@pytest.mark.parametrize("source", [sources.SILU_PROBLEM, sources.SOFTMAX_PROBLEM,
                                    shrunk("level2/80_Gemm_Max_Subtract_GELU.py",
                                           {"batch_size": 16, "in_features": 64, "out_features": 32,
                                            "max_dim": 0}),
                                    sources.SILU_PROBLEM.replace("randn(128, 2048)", LARGE), ARGMAX],
                         ids=["silu", "softmax", "kernelbench-l2-80-over-the-batch", "silu-large", "argmax"])
def test_an_honest_problem_is_not_named_degenerate(cpu_pool, source):
    result = cpu_pool.validate(source, seed=0)
    assert result["status"] == "ok", result["reason"]
    assert result["degenerate"] is None


@pytest.mark.slow
def test_an_integer_output_is_judged_exactly(cpu_pool):
    """Argmax (KernelBench level 1's 51) has no tolerance: an index kernel is correct, one writing
    zeros is not (an exact match once counted as an infinite error, which let any output pass)."""
    honest = cpu_pool.evaluate(ARGMAX, ARGMAX_KERNEL % 0, seed=0)
    assert honest["status"] == "correct", honest["reason"]
    zeros = cpu_pool.evaluate(ARGMAX, ARGMAX_KERNEL % 1, seed=0)
    assert zeros["status"] == "incorrect", zeros["reason"]
