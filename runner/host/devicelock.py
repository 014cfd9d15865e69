"""The device lock: one candidate or baseline timed at a time per device. Sandbox.run takes it
when the judge asks for the device and holds it until the sandbox has exited."""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading

_device_locks = {"cpu": threading.Lock(), "cuda": threading.Lock()}


def timing_cpus(threads: int) -> list[int]:
    """The cores CPU timing runs on: the last `threads` this process may use, the same for every
    timed process, so a candidate's blocks and the eager baseline's blocks between them
    (runner/host/pairing.py) meet the same core and its neighbours' load, not whichever core the
    scheduler gave each process (on a shared host a per-core difference moved whole runs by
    20% or more, docs/BENCHMARKS.md). CPU 0, which takes most of the host's housekeeping, last."""
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[-max(1, min(threads, len(allowed))):]


class DeviceLock:
    """Nothing else runs on a GPU while a candidate or a baseline is judged there: a lock inside
    this process and a file lock across processes (several workers on one host). On the CPU the
    lock is this process's only: timings on shared cores disturb each other as well."""

    def __init__(self, device: str):
        self.device = device
        self._file = None

    def acquire(self) -> "DeviceLock":
        _device_locks[self.device].acquire()
        if self.device != "cuda":
            return self
        which = os.environ.get("CUDA_VISIBLE_DEVICES", "all").replace(",", "_") or "all"
        self._file = open(os.path.join(tempfile.gettempdir(), f"kernellab-gpu-{which}.lock"), "w")
        fcntl.flock(self._file, fcntl.LOCK_EX)
        return self

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None
        _device_locks[self.device].release()
