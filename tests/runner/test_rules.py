"""KernelBench's correctness rule in the runner (runner/common/rules.py), on the CPU with real sandboxes and
the trusted judge: the same kernels judged under KernelLab's rule and KernelBench's."""

import pytest

from runner.common import rules
from runner import RunnerError

from . import sources

# The C SiLU of sources.py, every output moved by OFFSET: within KernelBench's allclose (atol = rtol =
# 1e-2) at 3e-3, outside KernelLab's 1e-4 (and PyTorch's own fp32 error, ~1e-7); outside both at 0.5.
_SHIFTED_SILU = sources.SILU_KERNEL.replace("y[i] = x[i] / (1.0f + expf(-x[i]));",
                                            "y[i] = x[i] / (1.0f + expf(-x[i])) + OFFSET;")
NEAR_SILU = _SHIFTED_SILU.replace("OFFSET", "3e-3f")
FAR_SILU = _SHIFTED_SILU.replace("OFFSET", "0.5f")

LINEAR_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.linear = nn.Linear(n, n)

    def forward(self, x):
        return self.linear(x)

def get_inputs():
    return [torch.randn(8, 64)]

def get_init_inputs():
    return [64]
'''

# Its parameters have the reference's names, but the random draw before them moves the generator:
# copied by name (KernelLab) they are the reference's; built under the same seed (KernelBench) they
# are not, so KernelBench calls it wrong, as its own eval would.
LINEAR_DRAWS_FIRST = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.noise = torch.randn(n)
        self.linear = nn.Linear(n, n)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
'''


def test_rules_resolve_and_say_what_they_are():
    assert rules.resolve(None) == rules.KERNELLAB and rules.resolve("kernelbench-v0.1") == rules.KERNELBENCH
    with pytest.raises(RunnerError, match="rule must be one of"):
        rules.resolve("kernelbook")
    assert rules.tolerance(rules.KERNELBENCH, "float32") == (1e-2, 1e-2)
    assert rules.tolerance(rules.KERNELBENCH_MAIN, "float32") == (1e-4, 1e-4)
    assert rules.tolerance(rules.KERNELBENCH_MAIN, "bfloat16") == (1e-2, 1e-2)
    assert rules.trials(rules.KERNELBENCH, {"get_inputs": 3, "uniform": 1}) == {"get_inputs": 5}
    assert rules.describe(rules.KERNELBENCH)["statistic"] == "mean"


def test_a_kernel_within_1e_2_passes_kernelbench_and_fails_kernellab(cpu_pool):
    kernellab = cpu_pool.evaluate(sources.SILU_PROBLEM, NEAR_SILU, seed=5)
    assert kernellab["status"] == "incorrect", kernellab["reason"]
    assert kernellab["rule"]["name"] == "kernellab" and kernellab["correctness"]["atol"] == 1e-4

    kernelbench = cpu_pool.evaluate(sources.SILU_PROBLEM, NEAR_SILU, seed=5, rule="kernelbench")
    assert kernelbench["status"] == "correct", kernelbench["reason"]
    assert kernelbench["rule"] == {"name": "kernelbench", "version": "v0.1", "reference": "fp32 on the same device",
                                   "trials": 5, "statistic": "mean"}
    correctness = kernelbench["correctness"]
    assert (correctness["atol"], correctness["rtol"]) == (1e-2, 1e-2)
    [row] = correctness["per_distribution"]  # KernelBench's trials: get_inputs only, five of them
    assert (row["name"], row["trials"], row["ref_fp32_err"]) == ("get_inputs", 5, 0.0)
    assert row["max_abs_err"] == pytest.approx(3e-3, rel=0.05)
    measured = kernelbench["kernelbench"]  # its statistic, the mean, beside the median
    assert measured["mean_ms"] == kernelbench["timing"]["mean_ms"] and measured["eager_mean_ms"] > 0
    assert measured["speedup_vs_eager"] == pytest.approx(measured["eager_mean_ms"] / measured["mean_ms"])
    assert kernelbench["speedup_vs_eager"] > 0  # the median's, as under KernelLab's rule

    main = cpu_pool.evaluate(sources.SILU_PROBLEM, NEAR_SILU, seed=5, rule="kernelbench-main")
    assert main["status"] == "incorrect" and main["correctness"]["atol"] == 1e-4  # main: 1e-4 for fp32


def test_a_kernel_outside_both_fails_both(cpu_pool):
    for rule in ("kernellab", "kernelbench"):
        result = cpu_pool.evaluate(sources.SILU_PROBLEM, FAR_SILU, seed=6, rule=rule)
        assert result["status"] == "incorrect", (rule, result["reason"])
        assert result["kernelbench"] is None and result["timing"] is None


def test_kernelbench_builds_both_models_under_one_seed_and_copies_nothing(cpu_pool):
    kernellab = cpu_pool.evaluate(LINEAR_PROBLEM, LINEAR_DRAWS_FIRST, seed=7, allow_library=True)
    assert kernellab["status"] == "correct", kernellab["reason"]
    kernelbench = cpu_pool.evaluate(LINEAR_PROBLEM, LINEAR_DRAWS_FIRST, seed=7, allow_library=True,
                                    rule="kernelbench")
    assert kernelbench["status"] == "incorrect", kernelbench["reason"]


TORCH_NEAR_SILU = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x) + 3e-3
'''


@pytest.mark.gpu
def test_on_the_gpu_the_fp32_reference_is_the_devices_and_1e_2_decides(cuda_pool):
    kernellab = cuda_pool.evaluate(sources.SILU_PROBLEM, TORCH_NEAR_SILU, seed=5, allow_library=True)
    assert kernellab["status"] == "incorrect", kernellab["reason"]
    kernelbench = cuda_pool.evaluate(sources.SILU_PROBLEM, TORCH_NEAR_SILU, seed=5, allow_library=True,
                                     rule="kernelbench")
    assert kernelbench["status"] == "correct", kernelbench["reason"]
    assert kernelbench["correctness"]["per_distribution"][0]["trials"] == 5
    assert kernelbench["kernelbench"]["speedup_vs_eager"] > 0


def test_the_command_line_takes_the_rule_and_names_it(tmp_path):
    from .test_cli import run_cli

    problem, kernel = tmp_path / "p.py", tmp_path / "k.py"
    problem.write_text(sources.SILU_PROBLEM)
    kernel.write_text(NEAR_SILU)
    done = run_cli("evaluate", str(problem), str(kernel), "--seed", "5", "--rule", "kernelbench")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("status: correct")
    assert "rule: kernelbench (v0.1): allclose to the reference (fp32 on the same device), 5 trials" in done.stdout
    assert "KernelBench's statistic: mean" in done.stdout
