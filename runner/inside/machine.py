"""A sandbox's warm-up, and what it reports about where it runs: device name, versions, threads,
isolation (part of the environment a baseline is cached under, baselines.ENV_KEYS)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from ..common.dispatchmode import OpRecorder
from ..common.version import RUNNER_VERSION


def warm_up(device: str) -> dict:
    threads = int(os.environ.get("KERNELLAB_THREADS", "1"))
    torch.set_num_threads(threads)
    if device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("CUDA is not available in this sandbox")
        torch.cuda.init()
        torch.empty(1, device="cuda")
        try:
            import cupy  # noqa: F401  (pre-imported: the fast compile path)
        except ImportError:
            pass
        else:
            from ..common import gpucompare

            gpucompare.prepare()  # the judge's comparison built and loaded here, not under the device lock
    return environment(device, threads)


def warm_dispatch() -> None:
    """The first op under the runner's dispatch mode, before an evaluation's snapshot and outside the
    device lock (on the CPU: nothing runs on the GPU's SMs). It leaves torch._dynamo unimported
    (runner/common/dispatchmode.py): half the sandboxes never enter a mode, and a candidate that
    compiles nothing never needs Dynamo."""
    with OpRecorder():
        torch.zeros(8).sum()


def environment(device: str, threads: int) -> dict:
    if device == "cuda":
        name = torch.cuda.get_device_name(0)
    else:
        name = cpu_name()
    return {
        "device_name": name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda if device == "cuda" else None,
        "driver": driver_version() if device == "cuda" else None,
        "python": platform.python_version(),
        "runner_version": RUNNER_VERSION,
        "threads": threads,
        "isolation": os.environ.get("KERNELLAB_ISOLATION", "process"),
        "device_uuid": device_uuid() if device == "cuda" else None,
    }


def device_uuid() -> str | None:
    """NVML's name for this device ("GPU-..."): the parent reads the device's state by it,
    as NVML does not follow CUDA_VISIBLE_DEVICES."""
    try:
        text = str(torch.cuda.get_device_properties(0).uuid)
    except Exception:
        return None
    return text if text.startswith("GPU-") else f"GPU-{text}"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def driver_version() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
        for word in text.split():
            if word.count(".") >= 1 and word.replace(".", "").isdigit():
                return word
    except OSError:
        pass
    try:
        import cupy

        version = cupy.cuda.runtime.driverGetVersion()
        return f"{version // 1000}.{version % 1000 // 10}"
    except Exception:
        return None
