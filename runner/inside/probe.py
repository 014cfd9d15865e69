"""What works inside a sandbox, checked from inside one: `python -m runner probe --device cuda`.

Run as the sandbox's `probe` job (trusted code, no candidate): the uid, capabilities,
no_new_privs and seccomp state it runs with, whether host secrets are visible, and on a
GPU whether CUDA, NVRTC (cupy), Triton and its cache, CUPTI activity (torch.profiler),
NVML, GPU performance counters (runner/common/counters.py) and, with `load_inline`, torch's C++/CUDA
extension build work under that uid and filter. Each check reports ok or its error; nothing here raises.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def _status() -> dict:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Uid", "Gid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Seccomp"):
            fields[key] = value.split()[0]
    return fields


def _check(results: dict, name: str, fn) -> None:
    started = time.perf_counter()
    try:
        detail = fn()
        results[name] = {"ok": True, "seconds": round(time.perf_counter() - started, 3), "detail": detail}
    except BaseException as exc:  # a probe reports, never fails
        results[name] = {"ok": False, "seconds": round(time.perf_counter() - started, 3),
                         "error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def run(device: str, load_inline: bool = False) -> dict:
    results: dict = {"status": "ok", "process": _status(),
                     "visible": {p: os.path.exists(p) for p in ("/etc/shadow", "/root/.ssh", "/var/run", "/home")}}
    if device != "cuda":
        return results
    import torch

    _check(results, "cuda", lambda: (torch.ones(1 << 20, device="cuda").sum().item(), torch.cuda.get_device_name(0)))
    _check(results, "nvrtc", _nvrtc)
    _check(results, "triton", _triton)
    _check(results, "cupti", _cupti)
    _check(results, "nvml", _nvml)
    _check(results, "counters", _counters)
    if load_inline:
        _check(results, "load_inline", _load_inline)
    return results


def _nvrtc():
    import cupy
    import torch

    kernel = cupy.RawKernel(r'extern "C" __global__ void twice(float *x, int n) {'
                            r' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }', "twice")
    x = torch.ones(1024, device="cuda")
    with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        kernel((4,), (256,), (cupy.uint64(x.data_ptr()), cupy.int32(1024)))
    torch.cuda.synchronize()
    assert float(x.sum()) == 2048.0
    return os.listdir(os.environ["CUPY_CACHE_DIR"])[:3]


def _triton():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)

    x = torch.zeros(4096, device="cuda")
    add_one[(4,)](x, 4096, BLOCK=1024)
    torch.cuda.synchronize()
    assert float(x.sum()) == 4096.0
    cached = sum(len(files) for _, _, files in os.walk(os.environ["TRITON_CACHE_DIR"]))
    assert cached > 0, "nothing in TRITON_CACHE_DIR"
    return {"triton": triton.__version__, "cache_files": cached}


def _cupti():
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.randn(1 << 16, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        (x * 2).sum()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
    assert kernels, "no CUDA activity recorded"
    return len(kernels)


def _counters():
    """Whether the profile can have Nsight Compute metrics here, as the sandbox's uid sees it."""
    from ..common import counters

    return {**counters.status(), "ncu_trial": counters.ncu_trial()}


def _nvml():
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
    processes = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    return {"used_mib": memory.used // (1 << 20), "processes_seen": len(processes)}


def _load_inline():
    import torch
    from torch.utils.cpp_extension import load_inline

    cuda = r"""
    __global__ void twice(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }
    torch::Tensor run(torch::Tensor x) { twice<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel());
                                         return x; }
    """
    module = load_inline("kernellab_probe", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=cuda,
                         functions=["run"], extra_cuda_cflags=["-arch=sm_90"])
    x = module.run(torch.ones(512, device="cuda"))
    torch.cuda.synchronize()
    assert float(x.sum()) == 1024.0
    return "built and ran"


def health(device: str) -> dict:
    """The sandbox's `health` job: a sum the device must get right (a poisoned context fails it)."""
    import torch

    from ..common.compile import first_line

    try:
        x = torch.arange(1 << 20, device=device, dtype=torch.float32)
        total = float(x.sum())
        if device == "cuda":
            torch.cuda.synchronize()
        ok = total == float((1 << 20) * ((1 << 20) - 1) / 2)
        return {"status": "ok" if ok else "failed", "reason": "" if ok else f"sum was {total}"}
    except Exception as exc:  # a poisoned context shows up here
        return {"status": "failed", "reason": first_line(str(exc))}
