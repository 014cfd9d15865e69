"""A kernel that is torch.compile's work: with library calls it runs and is judged under the runner's
op recorder, whether it compiles in __init__ or on its first forward call (fullgraph, so Dynamo must
compile, not fall back); without them it is refused for what it is, under any of torch's names for it."""

import pytest

from . import sources

COMPILED = '''import torch


def softmax_rows(x):
    return torch.softmax(x, dim=1)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.compiled = torch.compile(softmax_rows, fullgraph=True)
        WARM

    def forward(self, x):
        with torch.no_grad():
            return self.compiled(x)
'''

LAZY = COMPILED.replace("WARM", "pass")
WARM = COMPILED.replace("WARM", "self.compiled(torch.randn(4, 8))  # guards on grad mode: recompiled under no_grad")


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [LAZY, WARM], ids=["compiled-in-forward", "compiled-in-init"])
def test_a_compiled_kernel_is_judged_with_library_calls(cpu_pool, kernel):
    result = cpu_pool.evaluate(sources.SOFTMAX_PROBLEM, kernel, seed=0, allow_library=True)
    assert result["status"] == "correct", result["reason"]
    assert result["fallback"] is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["torch.compile", "torch.compiler.compile"])
def test_a_compiled_kernel_without_library_calls_is_refused(cpu_pool, name):
    result = cpu_pool.evaluate(sources.SOFTMAX_PROBLEM, LAZY.replace("torch.compile(", f"{name}("), seed=0)
    assert result["status"] == "rejected" and f"calls {name}," in result["reason"], result["reason"]
