"""What is wrong, said to the kernel's author (verify.mismatch, findings.wrong_outputs): how many
elements, NaN and infinities, and where only when the whole output was compared (a sampled output's
positions are the judge's secret)."""

import pytest
import torch

from runner.common import findings, verify

from . import sources


def test_an_unwritten_last_column_is_named_with_its_count():
    truth = torch.randn(8, 16)
    out = truth.clone()
    out[:, -1] = float("nan")
    found = verify.mismatch(out, truth, 1e-4, 1e-4, whole=True)
    assert found == {"wrong": 8, "total": 128, "nan": 8, "inf": 0, "pattern": "the last column"}
    text = findings.wrong_outputs("randn", 9.9, 0.01, 1.0, found)
    assert text.endswith("; 8 of 128 elements wrong (6.25%), all in the last column, 8 NaN, 0 infinite")


def test_tail_rows_are_named_and_scattered_errors_or_samples_are_not_placed():
    truth = torch.randn(8, 16)
    out = truth.clone()
    out[6:] += 1
    assert verify.mismatch(out, truth, 1e-4, 1e-4, whole=True)["pattern"] == "the last 2 rows"
    scattered = truth.clone()
    scattered[0, 3] += 1
    scattered[5, 9] += 1
    assert verify.mismatch(scattered, truth, 1e-4, 1e-4, whole=True)["pattern"] is None
    assert verify.mismatch(out, truth, 1e-4, 1e-4, whole=False)["pattern"] is None  # a sample: no places
    assert verify.mismatch(truth.clone(), truth, 1e-4, 1e-4, whole=True)["wrong"] == 0


LAST_COLUMN_UNWRITTEN = sources.SILU_KERNEL.replace(
    "LIB.silu(x.data_ptr(), y.data_ptr(), x.numel())",
    "for r in range(x.shape[0]):\n            LIB.silu(x[r].data_ptr(), y[r].data_ptr(), x.shape[1] - 1)")


@pytest.mark.slow
def test_the_verdict_of_a_kernel_that_skips_its_last_column_says_so(cpu_pool):
    problem = sources.SILU_PROBLEM.replace("torch.randn(128, 2048)", "torch.randn(16, 64)")
    result = cpu_pool.evaluate(problem, LAST_COLUMN_UNWRITTEN, seed=2)
    assert result["status"] == "incorrect", result["reason"]
    # (what the unwritten column holds depends on the memory it got: NaN from the poisoning, or other garbage)
    assert "16 of 1,024 elements wrong (1.56%), all in the last column" in result["reason"], result["reason"]
