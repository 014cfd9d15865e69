"""Cheat without library calls (look-alike of a CUDA graph): the graph, captured in __init__ where the op
recorder does not look, holds PyTorch's own softmax; forward replays it beside a token launch of its own
kernel, passing the library's work off as its own. Only the launch accounting of the replayed kernels sees it."""

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
        # Captured here, out of forward's sight, for the problem's input shape.
        self.static_x = torch.zeros(64, 512, device="cuda")
        self.static_y = torch.empty_like(self.static_x)
        torch.softmax(self.static_x, dim=1)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_y.copy_(torch.softmax(self.static_x, dim=1))

    def forward(self, x):
        self.static_x.copy_(x)
        self.graph.replay()
        token = torch.empty_like(x[:1])
        launch(x[:1], token)
        return self.static_y
