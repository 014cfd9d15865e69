"""Partial replacement (a kernel of its own, PyTorch for the rest) has a verdict reason of its own:
`rejected` with the ops named and reason_code `partial_replacement`, distinct from a cheat; with
library calls allowed it is judged and timed normally. Static (checks.py), at run time
(verify.library_use) and end to end on the CPU."""

import textwrap

import pytest

from runner.common import findings
from runner.host.checks import check_findings

from . import sources

# relu(x) * 2 + 1: the kernel does the affine part in C, relu stays in PyTorch.
PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0 + 1.0

def get_inputs():
    return [torch.randn(64, 512)]

def get_init_inputs():
    return []
'''

KERNEL = sources._C_PRELUDE + '''
LIB = build(r"""
#include <stdint.h>
void affine(const float *x, float *y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = x[i] * 2.0f + 1.0f; }
""")
LIB.affine.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]


class ModelNew(nn.Module):
    def forward(self, x):
{forward}
'''

PARTIAL = '''
r = torch.relu(x).contiguous()
out = torch.empty_like(r)
LIB.affine(r.data_ptr(), out.data_ptr(), r.numel())
return out
'''

# The look-alike cheat: PyTorch computes everything the reference does; the kernel only copies.
DECOY = '''
r = (torch.relu(x) * 2.0 + 1.0).contiguous()
out = torch.empty_like(r)
LIB.affine(r.data_ptr(), out.data_ptr(), 0)
out.copy_(r)
return out
'''


def kernel(forward: str) -> str:
    return KERNEL.replace("{forward}", textwrap.indent(textwrap.dedent(forward), " " * 8))


def test_partial_replacement_is_one_finding_naming_the_ops_with_its_code():
    found = check_findings(kernel(PARTIAL), reference_source=PROBLEM, device="cpu")
    assert [f.code for f in found] == [findings.PARTIAL], found
    assert "uses PyTorch for relu;" in found[0].reason
    assert "allowed when the search allows library calls" in found[0].reason
    assert found[0].status == "advisory"  # the run decides: the op recorder names what PyTorch computed


def test_partial_replacement_passes_with_library_calls():
    assert check_findings(kernel(PARTIAL), reference_source=PROBLEM, device="cpu", allow_library=True) == []


def test_a_decoy_kernel_beside_pytorch_doing_all_of_it_is_a_cheat_not_partial():
    found = check_findings(kernel(DECOY), reference_source=PROBLEM, device="cpu")
    assert found and found[0].code == findings.RULE, found
    assert not any(f.code == findings.PARTIAL for f in found), found
    assert "reference's own operation (relu)" in found[0].reason


def test_a_cheat_is_reported_before_the_partial_hint():
    cached = PARTIAL.replace("return out", "self.last = out\nreturn out")
    found = check_findings(kernel(cached), reference_source=PROBLEM, device="cpu")
    assert found[0].code == findings.RULE and "self.last" in found[0].reason, found
    assert found[-1].code == findings.PARTIAL


def test_pytorch_alone_is_no_kernel_of_its_own():
    source = PARTIAL.replace("LIB.affine(r.data_ptr(), out.data_ptr(), r.numel())", "out = r * 2.0 + 1.0")
    found = check_findings(kernel(source).replace("LIB = build(", "UNUSED = (").replace(
        "LIB.affine.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]", ""),
        reference_source=PROBLEM, device="cpu")
    assert any(f.code == findings.NO_KERNEL for f in found), found
    assert not any(f.code == findings.PARTIAL for f in found), found


def test_hip_is_a_compile_error_naming_rocm():
    source = kernel(PARTIAL).replace("#include <stdint.h>", "#include <hip/hip_runtime.h>")
    found = check_findings(source, reference_source=PROBLEM, device="cuda")
    assert [(f.status, f.code) for f in found] == [("compile_error", findings.TOOLCHAIN)]
    assert "ROCm" in found[0].reason


def test_cuda_that_mentions_hip_in_prose_is_not_hip():
    source = kernel(PARTIAL).replace("# relu", "# relu").replace('LIB = build(r"""', 'LIB = build(r"""\n// ships a hip flask')
    assert all(f.code != findings.TOOLCHAIN for f in check_findings(source, reference_source=PROBLEM))


# --- at run time --------------------------------------------------------------------------------

def test_runtime_pytorch_beside_own_launches_is_partial():
    from runner.common import verify

    found = verify.library_use(["aten.relu.default", "aten.empty_like.default", "aten.addmm.default"], 1, 2)
    assert found.code == findings.PARTIAL
    assert "uses PyTorch for relu, addmm;" in found.reason and "untimed call 2" in found.reason


def test_runtime_pytorch_without_own_launches_is_no_kernel():
    from runner.common import verify

    assert verify.library_use(["aten.relu.default"], 0, 1).code == findings.NO_KERNEL
    assert verify.library_use(["aten.empty.memory_format"], 0, 1).code == findings.NO_KERNEL
    assert verify.library_use(["aten.empty.memory_format", "aten.view.default"], 3, 1) is None


# --- end to end ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_partial_kernel_end_to_end(cpu_pool):
    """The static finding reaches the verdict with its code; with library calls allowed the same
    kernel runs, is correct and timed. Through the sandbox, the runtime rule gives the same code:
    the relu is reached by a name the static checks cannot resolve."""
    source = kernel(PARTIAL)
    refused = cpu_pool.evaluate(PROBLEM, source, seed=3)
    assert (refused["status"], refused["reason_code"]) == ("rejected", findings.PARTIAL), refused["reason"]
    allowed = cpu_pool.evaluate(PROBLEM, source, seed=3, allow_library=True)
    assert allowed["status"] == "correct", allowed["reason"]
    assert allowed["reason_code"] is None and allowed["timing"]["n"] >= 10
    # A lambda's body is beyond the static checks; the op recorder sees the relu all the same.
    hidden = kernel(PARTIAL.replace("torch.relu(x)", "ACT(x)")).replace("class ModelNew", "ACT = lambda t: t.clamp_min(0)\n\n\nclass ModelNew")
    assert check_findings(hidden, reference_source=PROBLEM, device="cpu") == []
    runtime = cpu_pool.evaluate(PROBLEM, hidden, seed=3)
    assert (runtime["status"], runtime["reason_code"]) == ("rejected", findings.PARTIAL), runtime["reason"]
    assert "uses PyTorch for clamp_min" in runtime["reason"]
