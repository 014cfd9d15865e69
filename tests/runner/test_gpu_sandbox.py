"""The sandbox's socket filter and open-file limit on a GPU host: refused families stay refused
there, and what a CUDA kernel is built and run with (nvcc through load_inline here; NVRTC through
cupy and Triton in test_gpu.py and test_gpu_judging.py) works under them.
Run on a GPU host: python3 -m pytest -p no:django -p no:playwright -p no:cacheprovider tests/runner -m gpu"""

from pathlib import Path

import pytest

from runner.host import filetable
from tests.runner.test_gpu_judging import PROBLEM

pytestmark = pytest.mark.gpu

ATTACKS = Path(__file__).with_name("attacks")

LOAD_INLINE_CUDA = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void affine(const float *x, float *y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 2.0f + 1.0f;
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    affine<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

module = load_inline(name="affine_nvcc", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=CUDA,
                     functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return module.run(x.contiguous())
'''


@pytest.mark.parametrize("attack", ["vsock_socket", "inet_socket"])
def test_refused_socket_families_stay_refused_in_a_gpu_sandbox(cuda_pool, attack):
    source = "\n".join((ATTACKS / f"{name}.py").read_text() for name in ("_prelude", attack, "_problem"))
    result = cuda_pool.validate(source, seed=0)
    assert result["status"] == "invalid", result
    assert "[Errno 13] Permission denied" in result["reason"], result["reason"]


def test_a_cuda_load_inline_kernel_builds_with_nvcc_under_the_filter_and_file_limit(cuda_pool):
    result = cuda_pool.evaluate(PROBLEM, LOAD_INLINE_CUDA, seed=1, timeout=600)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")
    assert filetable.FLOOR <= result["limits"]["files"] <= filetable.FILES_DEFAULT
