"""The GPU memory cap, enforced from the parent: NVML reports each process's device memory,
and a sandbox whose processes (its slot's uid) hold more than the cap is killed, its verdict
`oom`. cgroups know nothing of device memory, and CUDA rules out RLIMIT_AS.

NVML (nvidia-ml-py) is read-only driver state: no CUDA context is made here. Without NVML
the cap is not enforced, and the sandbox's limits say so.
"""

from __future__ import annotations

import os
import re
import threading
import time

from ..common import procs

POLL_S = 0.2
_UNITS = {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}
_SIZE = r"([\d.]+) (B|KiB|MiB|GiB|TiB)"
# PyTorch's caching allocator, on a failed allocation (c10/cuda/CUDACachingAllocator.cpp)
_TORCH_OOM = re.compile(rf"Tried to allocate {_SIZE}\. GPU \d+ has a total capacity of {_SIZE} of which {_SIZE} "
                        rf"is free\.(?: Including non-PyTorch memory,)? this process has {_SIZE} memory in use")
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


def usage_mb() -> dict[int, int]:
    """Device memory held per uid, all devices together: one pass over NVML's process lists."""
    nvml = _library()
    if nvml is None:
        return {}
    held: dict[int, int] = {}
    for handle in _handles(nvml):
        try:
            processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except Exception:
            continue
        for process in processes:
            uid = procs.uid_of(process.pid) if process.usedGpuMemory else None
            if uid is not None:
                held[uid] = held.get(uid, 0) + process.usedGpuMemory
    return {uid: used // (1024 * 1024) for uid, used in held.items()}


def others_fault(text: str, cap: int) -> str | None:
    """Why an out-of-memory failure is the device's, not the candidate's: PyTorch's message
    says that the process held less than its cap even with the allocation that failed, and
    that the device had no room for it, so other work held the rest. None when the text says
    nothing of the kind (any other out-of-memory stays the candidate's `oom`). The text comes
    from the candidate's side; a candidate that fakes it only gets itself run again, then not
    judged at all (evaluation.py), never a better verdict."""
    found = _TORCH_OOM.search(text)
    if not found:
        return None
    sizes = [float(found.group(i)) * _UNITS[found.group(i + 1)] for i in (1, 3, 5, 7)]
    asked, total, free, held = sizes
    if held + asked > cap or free >= asked:
        return None
    return (f"it held {held:.0f} MB and asked for {asked:.0f} MB more, within its {cap} MB; "
            f"the device had {free:.0f} MB of {total:.0f} MB free")


class Watch:
    """Watches one sandbox's uid while it runs; calls `on_exceeded(used_mb)` once past the cap."""

    def __init__(self, uid: int, cap: int, on_exceeded, poller: "Poller | None" = None):
        self.uid, self.cap, self.on_exceeded = uid, cap, on_exceeded
        self._done = False
        self._poller = poller or _POLLER
        self._poller.add(self)

    def seen(self, used: int) -> None:
        if self._done:
            return
        if used > self.cap:
            self.stop()
            self.on_exceeded(used)

    def stop(self) -> None:
        self._done = True
        self._poller.discard(self)


class Poller:
    """One thread reads the usage for every watched sandbox, every POLL_S, while any is watched:
    a reader per sandbox would walk NVML's whole process list once per sandbox, quadratic in the
    pool's size and all in the evaluator's process, beside the sandbox that holds the device."""

    def __init__(self, read=usage_mb, every_s: float = POLL_S):
        self.read, self.every = read, every_s
        self._watches: set[Watch] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, watch: Watch) -> None:
        with self._lock:
            self._watches.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="gpu-memory")
                self._thread.start()

    def discard(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)

    def _run(self) -> None:
        while True:
            time.sleep(self.every)
            with self._lock:
                watches = list(self._watches)
                if not watches:
                    self._thread = None
                    return
            usage = self.read()
            for watch in watches:
                watch.seen(usage.get(watch.uid, 0))


_POLLER = Poller()
