"""A validation says when its FLOP count is only an upper bound, and the app's speed of light
follows it: a compute-bound floor from such a count reads "at most"."""

import pytest

from runner.host import schema
from runner.api import Pool

OVERLAP = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        c = a @ b
        return c[:, :8] + c[:, 4:12]


def get_inputs():
    return [torch.randn(64, 64), torch.randn(64, 64)]


def get_init_inputs():
    return []
'''
MATMUL = OVERLAP.replace("return c[:, :8] + c[:, 4:12]", "return c")


@pytest.fixture
def pool(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))  # no cached baseline from another run
    monkeypatch.setenv("KERNELLAB_BASELINE_COMPILE", "0")
    with Pool(device="cpu", size=1) as warm:
        yield warm


@pytest.mark.slow
def test_the_runner_reports_whether_the_flops_are_exact(pool):
    bounded = pool.validate(OVERLAP, seed=1)
    exact = pool.validate(MATMUL, seed=1)
    assert bounded["status"] == exact["status"] == "ok", (bounded["reason"], exact["reason"])
    # Overlapping slices of one product: the count is bounded by their sum, not known exactly.
    assert exact["flops_upper_bound"] is False and exact["flops"] == 2 * 64 ** 3
    assert bounded["flops_upper_bound"] is True and bounded["flops"] == 2 * 64 ** 3 * 16 // 64


def test_the_schema_keeps_the_flag_and_refuses_anything_but_true_or_false():
    ok = {"status": "ok", "reason": "", "outputs": None, "family": None, "flops": 10, "min_bytes": 64,
          "baseline": {"eager_ms": 0.2, "compile_ms": None, "compile_mode": None}}
    assert schema.validation(ok)["flops_upper_bound"] is None
    assert schema.validation({**ok, "flops_upper_bound": True})["flops_upper_bound"] is True
    with pytest.raises(schema.Malformed):
        schema.validation({**ok, "flops_upper_bound": "yes"})
