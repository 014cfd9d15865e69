"""Problems and honest kernels (KernelBench format) used by the runner's tests."""

from runner import bench

SOFTMAX_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

def get_inputs():
    return [torch.randn(64, 1024)]

def get_init_inputs():
    return []
'''

SILU_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)

def get_inputs():
    return [torch.randn(128, 2048)]

def get_init_inputs():
    return []
'''

LAYERNORM_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        return self.ln(x)

def get_inputs():
    return [torch.randn(32, 4096)]

def get_init_inputs():
    return [4096]
'''

# The C fast path: build with the system compiler under mkdtemp(), load with ctypes.
CONV_PROBLEM = """import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, padding=1)
    def forward(self, x):
        return self.conv(x)
def get_inputs():
    return [torch.randn(32, 64, 56, 56)]
def get_init_inputs():
    return []
"""

_C_PRELUDE = '''
import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn


def build(source):
    folder = tempfile.mkdtemp()
    src, lib = os.path.join(folder, "kernel.c"), os.path.join(folder, "kernel.so")
    with open(src, "w") as f:
        f.write(source)
    subprocess.run(["cc", "-O3", "-march=native", "-shared", "-fPIC", src, "-o", lib, "-lm"],
                   check=True, capture_output=True, text=True)
    return ctypes.CDLL(lib)
'''

SILU_KERNEL = _C_PRELUDE + '''
LIB = build(r"""
#include <math.h>
#include <stdint.h>
void silu(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
}
""")
LIB.silu.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        LIB.silu(x.data_ptr(), y.data_ptr(), x.numel())
        return y
'''

# The runner benchmark's C softmax (cc + ctypes), the same kernel the CPU bench times.
SOFTMAX_KERNEL = bench.CPU_SOFTMAX_KERNEL

_LAYERNORM_TEMPLATE = _C_PRELUDE + '''
LIB = build(r"""
#include <math.h>
#include <stdint.h>
void layernorm(const float *x, const float *w, const float *b, float *y, int64_t rows, int64_t cols,
               float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *in = x + r * cols;
        float *out = y + r * cols;
        %(STATS)s
        float inv = (float)(1.0 / sqrt(var + eps));
        for (int64_t c = 0; c < cols; c++) out[c] = (float)((in[c] - mean) * inv) * w[c] + b[c];
    }
}
""")
LIB.layernorm.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64, ctypes.c_int64, ctypes.c_float]


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)  # holds the weights; the kernel does the work

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        LIB.layernorm(x.data_ptr(), self.ln.weight.data_ptr(), self.ln.bias.data_ptr(), y.data_ptr(),
                      x.shape[0], x.shape[1], self.ln.eps)
        return y
'''

# Exact: two passes, accumulating in double.
LAYERNORM_EXACT_KERNEL = _LAYERNORM_TEMPLATE % {"STATS": """
        double s = 0.0;
        for (int64_t c = 0; c < cols; c++) s += in[c];
        double mean = s / cols;
        double q = 0.0;
        for (int64_t c = 0; c < cols; c++) { double d = in[c] - mean; q += d * d; }
        double var = q / cols;"""}

# Unstable: variance as E[x^2] - mean^2 in float, which cancels catastrophically for
# inputs of mean 1000 and std 0.1.
LAYERNORM_NAIVE_KERNEL = _LAYERNORM_TEMPLATE % {"STATS": """
        float s = 0.0f, q = 0.0f;
        for (int64_t c = 0; c < cols; c++) { s += in[c]; q += in[c] * in[c]; }
        float mean = s / cols;
        float var = q / cols - mean * mean;"""}

# Not a kernel of its own: forward computes with PyTorch.
SOFTMAX_BY_TORCH = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
'''

SILU_COMPILE_ERROR = _C_PRELUDE + '''
LIB = build(r"""
void silu(const float *x, float *y, long n) { for (long i = 0; i < n; i++) y[i] = x[i] * undefined_thing; }
""")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        LIB.silu(x.data_ptr(), y.data_ptr(), x.numel())
        return y
'''

SILU_LOAD_INLINE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <cmath>
torch::Tensor silu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const float *in = x.data_ptr<float>();
    float *out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); i++) out[i] = in[i] / (1.0f + std::exp(-in[i]));
    return y;
}
"""

module = load_inline(name="silu_inline", cpp_sources=CPP, functions=["silu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return module.silu(x.contiguous())
'''

# --- CUDA (cupy, NVRTC) -------------------------------------------------------------------

def cuda_softmax_problem(rows: int = 256, cols: int = 4096) -> str:
    """The benchmark's softmax problem (runner.bench), at a test-sized shape."""
    return bench.SOFTMAX_PROBLEM.replace("ROWS", str(rows)).replace("COLS", str(cols))


_CUPY_PRELUDE = '''
import cupy
import torch
import torch.nn as nn
'''

CUPY_SOFTMAX_KERNEL = _CUPY_PRELUDE + '''
SOURCE = r"""
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, long long cols) {
    const float* in = x + blockIdx.x * cols;
    float* out = y + blockIdx.x * cols;
    __shared__ float shared[32];
    float m = -3.402823466e38f, s = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = in[c];
        float nm = fmaxf(m, v);
        s = s * __expf(m - nm) + __expf(v - nm);
        m = nm;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float om = __shfl_xor_sync(0xffffffff, m, o), os = __shfl_xor_sync(0xffffffff, s, o);
        float nm = fmaxf(m, om);
        s = s * __expf(m - nm) + os * __expf(om - nm);
        m = nm;
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    __shared__ float shared_s[32];
    if (lane == 0) { shared[warp] = m; shared_s[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < warps ? shared[lane] : -3.402823466e38f;
        s = lane < warps ? shared_s[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            float om = __shfl_xor_sync(0xffffffff, m, o), os = __shfl_xor_sync(0xffffffff, s, o);
            float nm = fmaxf(m, om);
            s = s * __expf(m - nm) + os * __expf(om - nm);
            m = nm;
        }
        if (lane == 0) { shared[0] = m; shared_s[0] = s; }
    }
    __syncthreads();
    m = shared[0];
    float inv = 1.0f / shared_s[0];
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - m) * inv;
}
"""
KERNEL = cupy.RawModule(code=SOURCE, options=("-arch=sm_90",)).get_function("softmax_rows")


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            KERNEL((x.shape[0],), (512,), (cupy.uint64(x.data_ptr()), cupy.uint64(y.data_ptr()),
                                          cupy.int64(x.shape[1])))
        return y
'''

CUPY_ILLEGAL_ADDRESS = _CUPY_PRELUDE + '''
KERNEL = cupy.RawKernel(r"""
extern "C" __global__ void bad(float* y) { float* p = (float*)0x10; p[threadIdx.x] = 1.0f; y[0] = 0.0f; }
""", "bad")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            KERNEL((1,), (32,), (cupy.uint64(y.data_ptr()),))
        torch.cuda.synchronize()
        return y
'''

CUPY_SPIN = _CUPY_PRELUDE + '''
KERNEL = cupy.RawKernel(r"""
extern "C" __global__ void spin(float* y, int forever) { while (forever) { __nanosleep(1000); } y[0] = 0.0f; }
""", "spin")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            KERNEL((1,), (1,), (cupy.uint64(y.data_ptr()), cupy.int32(1)))
        torch.cuda.synchronize()
        return y
'''

CUPY_COMPILE_ERROR = _CUPY_PRELUDE + '''
KERNEL = cupy.RawModule(code=r"""
extern "C" __global__ void broken(float* y) { y[0] = not_declared; }
""").get_function("broken")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            KERNEL((1,), (1,), (cupy.uint64(y.data_ptr()),))
        return y
'''
