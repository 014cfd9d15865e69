"""The GPU memory cap, enforced from the parent: NVML reports each process's device memory,
and a sandbox whose processes (its slot's uid) hold more than the cap is killed, its verdict
`oom`. cgroups know nothing of device memory, and CUDA rules out RLIMIT_AS.

NVML (nvidia-ml-py) is read-only driver state: no CUDA context is made here. Without NVML
the cap is not enforced, and the sandbox's limits say so.
"""

from __future__ import annotations

import os
import threading

POLL_S = 0.2
_nvml = None
_nvml_lock = threading.Lock()


def _library():
    """pynvml, initialised once per process; None where NVML is missing."""
    global _nvml
    with _nvml_lock:
        if _nvml is None:
            try:
                import pynvml

                pynvml.nvmlInit()
                _nvml = pynvml
            except Exception:
                _nvml = False
        return _nvml or None


def cap_mb() -> int | None:
    """KERNELLAB_SANDBOX_GPU_MEMORY_MB, else 80% of the smallest visible device's memory
    (a runaway then cannot take a whole shared device); None without NVML."""
    nvml = _library()
    if nvml is None:
        return None
    configured = os.environ.get("KERNELLAB_SANDBOX_GPU_MEMORY_MB")
    if configured:
        return max(1, int(configured))
    totals = [nvml.nvmlDeviceGetMemoryInfo(h).total for h in _handles(nvml)]
    return int(min(totals) * 0.8) // (1024 * 1024) if totals else None


def _handles(nvml) -> list:
    return [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]


def _uid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def used_mb(uid: int) -> int:
    """Device memory held by the processes of `uid`, all devices together."""
    nvml = _library()
    if nvml is None:
        return 0
    total = 0
    for handle in _handles(nvml):
        try:
            processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except Exception:
            continue
        for process in processes:
            if process.usedGpuMemory and _uid(process.pid) == uid:
                total += process.usedGpuMemory
    return total // (1024 * 1024)


class Watch:
    """Polls while a sandbox runs; calls `on_exceeded(used_mb)` once past the cap."""

    def __init__(self, uid: int, cap: int, on_exceeded):
        self.uid, self.cap, self.on_exceeded = uid, cap, on_exceeded
        self.peak_mb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            used = used_mb(self.uid)
            self.peak_mb = max(self.peak_mb, used)
            if used > self.cap:
                self.on_exceeded(used)
                return

    def stop(self) -> None:
        self._stop.set()
