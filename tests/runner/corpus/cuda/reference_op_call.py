"""Cheat (calls the reference op): a do-nothing launch, then torch.softmax."""

import cupy as cp
import torch
import torch.nn as nn

CUDA_SOURCE = r"""
extern "C" __global__ void softmax_rows(const float* x, float* y, long long rows, long long cols) {
    /* writes nothing */
}
"""

KERNEL = cp.RawModule(code=CUDA_SOURCE).get_function("softmax_rows")


def launch(x, out):
    rows, cols = x.shape
    with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        KERNEL((rows,), (256,), (cp.uint64(x.data_ptr()), cp.uint64(out.data_ptr()), cp.int64(rows), cp.int64(cols)))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        launch(x, out)
        return torch.softmax(x, dim=1)
