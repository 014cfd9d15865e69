"""Honest row softmax as a CUDA graph (the field's pattern): captured once into static buffers, then each call
copies its input into the static input, replays, and returns the static output."""

import cupy as cp
import torch
import torch.nn as nn

CUDA_SOURCE = r"""
extern "C" __global__ void softmax_rows(const float* x, float* y, long long rows, long long cols) {
    __shared__ float red[256];
    long long r = blockIdx.x;
    if (r >= rows) return;
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -3.402823466e38f;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float inv = 1.0f / red[0];
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) * inv;
}
"""

KERNEL = cp.RawModule(code=CUDA_SOURCE).get_function("softmax_rows")


def launch(x, out):
    rows, cols = x.shape
    with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        KERNEL((rows,), (256,), (cp.uint64(x.data_ptr()), cp.uint64(out.data_ptr()), cp.int64(rows), cp.int64(cols)))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = None

    def forward(self, x):
        if self.graph is None or self.static_x.shape != x.shape:
            self.static_x = torch.zeros_like(x)
            self.static_y = torch.empty_like(x)
            launch(self.static_x, self.static_y)  # warm-up before the capture
            torch.cuda.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                launch(self.static_x, self.static_y)
        self.static_x.copy_(x)
        self.graph.replay()
        return self.static_y
