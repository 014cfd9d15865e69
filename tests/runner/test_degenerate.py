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
                                    sources.SILU_PROBLEM.replace("randn(128, 2048)", LARGE)],
                         ids=["silu", "softmax", "kernelbench-l2-80-over-the-batch", "silu-large"])
def test_an_honest_problem_is_not_named_degenerate(cpu_pool, source):
    result = cpu_pool.validate(source, seed=0)
    assert result["status"] == "ok", result["reason"]
    assert result["degenerate"] is None
