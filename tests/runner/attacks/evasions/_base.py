import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn

SOURCE = r"""
#include <math.h>
#include <stdint.h>
void softmax_rows(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *in = x + r * cols;
        float *out = y + r * cols;
        float m = in[0];
        for (int64_t c = 1; c < cols; c++) m = in[c] > m ? in[c] : m;
        double s = 0.0;
        for (int64_t c = 0; c < cols; c++) { float e = expf(in[c] - m); out[c] = e; s += e; }
        float inv = (float)(1.0 / s);
        for (int64_t c = 0; c < cols; c++) out[c] *= inv;
    }
}
"""


def _build():
    folder = tempfile.mkdtemp()
    src, lib = os.path.join(folder, "softmax.c"), os.path.join(folder, "softmax.so")
    with open(src, "w") as f:
        f.write(SOURCE)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", src, "-o", lib, "-lm"], check=True, capture_output=True)
    so = ctypes.CDLL(lib)
    so.softmax_rows.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    return so


LIB = _build()


def own_kernel(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    LIB.softmax_rows(x.data_ptr(), y.data_ptr(), x.shape[0], x.shape[1])
    return y
