"""Large outputs cross to the trusted judge as samples (runner/common/sampling.py): the same positions
in both sandboxes, revealed to the candidate's only after its output exists, and every element
still compared inside the candidate's sandbox, where that check can only refuse."""

import pytest
import torch

from runner.common import sampling

ROWS, COLS = 2, (sampling.SAMPLE // 2) + 4096  # just over the sampling threshold: 16.8 MB of float32

PROBLEM = f"""
import sys
import torch
import torch.nn as nn

DISARM = {{DISARM}}  # in the candidate's sandbox only: the whole-output check made a no-op


class Model(nn.Module):
    def forward(self, x):
        if DISARM and "kernellab_kernel" in sys.modules:
            sys.modules["runner.inside.jobs"].Shipper._compare_whole = lambda *args: None
        return torch.relu(x)


def get_inputs():
    return [torch.randn({ROWS}, {COLS})]


def get_init_inputs():
    return []
"""

KERNEL = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        {WRONG}
        return y
"""


def problem(disarm: bool = False) -> str:
    return PROBLEM.replace("{DISARM}", repr(disarm))


def kernel(wrong: str = "pass") -> str:
    return KERNEL.replace("{WRONG}", wrong)


def test_the_seed_needs_the_secret_and_names_one_output():
    secret = bytes(16)
    assert sampling.seed_for(secret, "trial/uniform/0/0") == sampling.seed_for(secret, "trial/uniform/0/0")
    assert sampling.seed_for(secret, "trial/uniform/0/0") != sampling.seed_for(secret, "trial/uniform/0/1")
    assert sampling.seed_for(secret, "set/0/0") != sampling.seed_for(b"\x01" * 16, "set/0/0")
    assert 0 <= sampling.seed_for(secret, "set/0/0") < 2**63


def test_a_sample_is_the_same_positions_of_any_tensor_of_that_size():
    truth = torch.randn(ROWS, COLS)
    candidate = truth.clone()
    candidate.view(-1)[::7] += 1.0
    seed = sampling.seed_for(b"k" * 16, "set/1/0")
    same = sampling.take(truth, seed)
    assert same.shape == (sampling.SAMPLE,)
    assert torch.equal(same, sampling.take(truth.clone(), seed))
    differs = (sampling.take(candidate, seed) != same).float().mean().item()
    assert 0.12 < differs < 0.16  # one position in seven was made wrong
    assert not torch.equal(same, sampling.take(truth, seed + 1))


def test_only_outputs_past_the_threshold_are_sampled():
    assert sampling.shipped_shape([64, 1024]) == [64, 1024]
    assert sampling.shipped_shape([sampling.SAMPLE]) == [sampling.SAMPLE]
    assert sampling.shipped_shape([ROWS, COLS]) == [sampling.SAMPLE]


@pytest.mark.slow
def test_a_large_output_is_judged_on_its_sample_and_checked_whole_in_its_sandbox(cpu_pool):
    honest = cpu_pool.evaluate(problem(), kernel(), seed=11, allow_library=True)
    assert honest["status"] == "correct", honest["reason"]
    assert honest["correctness"]["passed"]

    # One wrong element in 8.4M: a sample would miss it, the whole comparison in the sandbox does not.
    one = cpu_pool.evaluate(problem(), kernel("y.view(-1)[123457] += 1.0"), seed=12, allow_library=True)
    assert one["status"] == "incorrect", one["reason"]
    assert "wrong on the get_inputs inputs" in one["reason"]
    assert one["correctness"] is None  # the sandbox's refusal: the judge never had to compare


@pytest.mark.slow
def test_a_candidate_that_disarms_its_sandbox_check_is_caught_by_the_judges_sample(cpu_pool):
    result = cpu_pool.evaluate(problem(disarm=True), kernel("y.view(-1)[::100] += 1.0"), seed=13,
                               allow_library=True)
    assert result["status"] == "incorrect", result["reason"]
    assert result["correctness"]["passed"] is False  # the trusted judge's own comparison
    honest = cpu_pool.evaluate(problem(disarm=True), kernel(), seed=14, allow_library=True)
    assert honest["status"] == "correct", honest["reason"]
