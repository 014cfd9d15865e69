"""Static checks on the shapes real kernels take (runner/host/checks.py): a name rebound to a kernel's
result, empty placeholder tensors, the bodies of DSL kernels (Triton, CuTe, TileLang) and kernel
caches keyed on shapes pass; the cheats that look like each of them are still flagged."""

import textwrap

from runner.host.checks import check_source

ADD = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return a + b
'''

CONV = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, bias=False)

    def forward(self, x):
        return torch.relu(self.conv(x))
'''

LOAD_INLINE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="conv", cpp_sources="torch::Tensor conv(torch::Tensor x, torch::Tensor w, torch::Tensor b);",
                  cuda_sources="/* a hand-written convolution */", functions=["conv"])

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, bias=False)

    def forward(self, x):
{forward}
'''


def conv_kernel(forward: str) -> str:
    return LOAD_INLINE.format(forward=textwrap.indent(textwrap.dedent(forward), " " * 8))


def reasons(source: str, reference: str = CONV) -> list[str]:
    return check_source(textwrap.dedent(source), reference_source=reference, device="cuda")


# --- a name rebound to the kernel's result ---------------------------------------------------------

def test_name_rebound_to_the_kernels_result_is_not_the_input():
    assert reasons(conv_kernel('''
        x = ext.conv(x.contiguous(), self.conv.weight, torch.empty(0, device=x.device))
        return x
    ''')) == []


def test_name_rebound_to_a_view_of_the_input_is_still_the_input():
    found = reasons(conv_kernel('''
        y = ext.conv(x, self.conv.weight, torch.empty(0, device=x.device))
        x = x.view(-1)
        return x
    '''))
    assert any("returns its input (x)" in r for r in found), found


def test_input_returned_before_it_is_rebound_is_flagged():
    source = conv_kernel('''
        if x.numel() == 0:
            return x
        x = ext.conv(x, self.conv.weight, torch.empty(0, device=x.device))
        return x
    ''')
    early = textwrap.dedent(source).splitlines().index("            return x") + 1
    found = [r for r in reasons(source) if "returns its input" in r]
    assert found and all(r.startswith(f"line {early}:") for r in found), found


# --- placeholders --------------------------------------------------------------------------------

def test_empty_placeholder_tensors_are_allocation():
    for placeholder in ("torch.Tensor()", "torch.tensor([])", "torch.empty(0)"):
        assert reasons(conv_kernel(f'''
            return ext.conv(x, self.conv.weight, {placeholder})
        ''')) == [], placeholder


def test_a_tensor_built_from_the_inputs_values_is_computation():
    found = reasons(conv_kernel('''
        bias = torch.tensor([v * 2 for v in x.sum(dim=0).tolist()])
        return ext.conv(x, self.conv.weight, bias)
    '''))
    assert len(found) == 1 and "uses PyTorch for" in found[0] and "tensor" in found[0], found


# --- DSL kernel bodies ---------------------------------------------------------------------------

TRITON = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


{decorator}
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    out = tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, out, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
'''


def test_triton_kernel_body_is_the_kernels_arithmetic():
    assert reasons(TRITON.format(decorator="@triton.jit"), ADD) == []
    assert reasons(TRITON.format(decorator="@triton.autotune(configs=[], key=['n'])\n@triton.jit"), ADD) == []


def test_a_plain_function_indexed_like_a_kernel_is_not_one():
    # Without @triton.jit the "kernel" is ordinary Python computing on the tensors with PyTorch.
    source = TRITON.format(decorator="").replace(
        "add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)", "add_helper(a, b, out)")
    source += '''

def add_helper(a, b, out):
    out[:] = a + b
'''
    found = reasons(source, ADD)
    assert any("indexed assignment" in r or "operator +" in r for r in found), found


def test_a_home_made_decorator_named_jit_is_no_dsl():
    source = TRITON.replace("import triton.language as tl", "import triton.language as tl\n\n\ndef jit(f):\n"
                            "    return f").format(decorator="@jit").replace(
        "add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)", "add_helper(a, b, out)")
    source += '''

@jit
def add_helper(a, b, out):
    out[:] = a + b
'''
    found = reasons(source, ADD)
    assert any("indexed assignment" in r or "operator +" in r for r in found), found


CUTE = '''
import torch
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    m, n = gA.shape
    gC[tidx // n, tidx % n] = gA[tidx // n, tidx % n] + gB[tidx // n, tidx % n]


@cute.jit
def add_host(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
    add_kernel(mA, mB, mC).launch(grid=(1, 1, 1), block=(mA.shape[0] * mA.shape[1], 1, 1))


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.compiled = {}

    def forward(self, A, B):
        C = torch.empty_like(A)
        mA, mB, mC = from_dlpack(A), from_dlpack(B), from_dlpack(C)
        compiled = self.compiled.get(A.dtype)
        if compiled is None:
            compiled = self.compiled[A.dtype] = cute.compile(add_host, mA, mB, mC)
        compiled(mA, mB, mC)
        return C
'''


def test_cute_kernel_and_host_bodies_are_the_kernels_arithmetic():
    assert reasons(CUTE, ADD) == []


def test_cute_host_that_adds_with_pytorch_is_flagged():
    source = CUTE.replace("        compiled(mA, mB, mC)\n", "        compiled(mA, mB, mC)\n        C[:] = A + B\n")
    found = reasons(source, ADD)
    assert any("operator +" in r for r in found), found


TILELANG = '''
import torch
import torch.nn as nn
import tilelang
import tilelang.language as T


def build(M, N, dtype="float32"):
    @T.prim_func
    def add(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i, j in T.Parallel(M, 128):
                C[i, bx * 128 + j] = A[i, bx * 128 + j] + B[i, bx * 128 + j]

    return tilelang.compile(add, out_idx=[2], target="cuda")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernels = {}

    def get(self, M, N, dtype):
        key = (M, N, dtype)
        if key not in self.kernels:
            self.kernels[key] = build(M, N, dtype)
        return self.kernels[key]

    def forward(self, A, B):
        M, N = A.shape
        return self.get(M, N, "float32")(A.contiguous(), B.contiguous())
'''


def test_tilelang_kernel_nested_in_a_builder_and_a_cache_keyed_on_shapes_pass():
    assert reasons(TILELANG, ADD) == []


def test_a_helper_cache_keyed_on_the_input_itself_is_flagged():
    source = TILELANG.replace('return self.get(M, N, "float32")(A.contiguous(), B.contiguous())',
                              'return self.get(A, N, "float32")(A.contiguous(), B.contiguous())')
    found = reasons(source, ADD)
    assert any("self.kernels" in r and "input M" in r for r in found), found


# --- a persisting L2 window ----------------------------------------------------------------------

def test_a_persisting_l2_window_is_flagged_in_cuda_source_and_through_ctypes():
    in_cuda = conv_kernel('''
        return ext.conv(x, self.conv.weight, torch.empty(0))
    ''').replace("/* a hand-written convolution */",
                 "cudaStreamAttrValue v; v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;")
    assert any("persisting in L2" in r for r in reasons(in_cuda)), reasons(in_cuda)
    through_ctypes = conv_kernel('''
        CUDART.cudaStreamSetAttribute(torch.cuda.current_stream().cuda_stream, 1, None)
        return ext.conv(x, self.conv.weight, torch.empty(0))
    ''').replace("class ModelNew", "import ctypes\nCUDART = ctypes.CDLL('libcudart.so')\n\nclass ModelNew")
    found = reasons(through_ctypes)
    assert any("cudaStreamSetAttribute" in r and "persisting" in r for r in found), found


def test_opting_in_to_more_shared_memory_is_no_cache_policy():
    source = conv_kernel('''
        return ext.conv(x, self.conv.weight, torch.empty(0))
    ''').replace("/* a hand-written convolution */",
                 "cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);")
    assert reasons(source) == []
