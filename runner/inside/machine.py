"""What a sandbox reports about where it runs: device name, versions, threads, isolation.
Part of the environment a baseline is cached under (baselines.ENV_KEYS)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from ..common.version import RUNNER_VERSION


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
