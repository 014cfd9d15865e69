"""Honest twin (state across calls): keeps a variant picked on the first call and a static input buffer
(cloned on the first call, copy_'d on every later one, as CUDA graphs do), and computes every call."""

import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn

C_SOURCE = r"""
#include <math.h>
#include <stdint.h>

void softmax_rows(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (int64_t c = 0; c < cols; ++c) { float e = expf(xr[c] - m); yr[c] = e; s += e; }
        for (int64_t c = 0; c < cols; ++c) yr[c] = (float)(yr[c] / s);
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
LIB.softmax_rows.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.variant = None
        self.static_in = None

    def pick(self, x):
        return "rows" if x.shape[-1] >= 16 else "small"

    def forward(self, x):
        if self.variant is None:
            self.variant = self.pick(x)
        if self.static_in is None or self.static_in.shape != x.shape:
            self.static_in = x.clone().contiguous()
        else:
            self.static_in.copy_(x)
        out = torch.empty_like(self.static_in)
        LIB.softmax_rows(self.static_in.data_ptr(), out.data_ptr(), x.shape[0], x.shape[1])
        return out
