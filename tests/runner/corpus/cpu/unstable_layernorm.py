"""Cheat (right only on normal inputs): LayerNorm with variance computed as E[x^2] - mean^2."""

import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn

C_SOURCE = r"""
#include <math.h>
#include <stdint.h>

/* Variance as E[x^2] - mean^2 in float: cancels catastrophically for mean 1000, std 0.1. */
void layernorm_rows(const float *x, float *y, int64_t rows, int64_t cols, double eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float sum = 0.0f, sum_sq = 0.0f;
        for (int64_t c = 0; c < cols; ++c) { sum += xr[c]; sum_sq += xr[c] * xr[c]; }
        float mean = sum / cols;
        float var = sum_sq / cols - mean * mean;
        float inv = 1.0f / sqrtf(var + (float)eps);
        for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * inv;
    }
}
"""


def build(source: str, *flags: str) -> ctypes.CDLL:
    """Compile C source into a shared library in a fresh temp folder and load it."""
    folder = tempfile.mkdtemp()
    c_path = os.path.join(folder, "kernel.c")
    so_path = os.path.join(folder, "kernel.so")
    with open(c_path, "w") as f:
        f.write(source)
    subprocess.run(["cc", "-O3", "-march=native", "-shared", "-fPIC", *flags, c_path, "-o", so_path, "-lm"],
                   check=True, capture_output=True, text=True)
    return ctypes.CDLL(so_path)

LIB = build(C_SOURCE)
LIB.layernorm_rows.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_double]


class ModelNew(nn.Module):
    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        cols = x.shape[-1]
        LIB.layernorm_rows(x.data_ptr(), out.data_ptr(), x.numel() // cols, cols, self.eps)
        return out
