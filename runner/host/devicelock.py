"""The device lock: one candidate or baseline timed at a time per device. Sandbox.run takes it
when the judge asks for the device and holds it until the sandbox has exited.

On a GPU, work that is never timed (an evaluation's truths, a candidate's correctness trials)
may hold it shared where KERNELLAB_DEVICE_SHARERS is above 1 (the default, 1, keeps every holder
alone): up to that many such holders at once, never beside a timing, which waits for them to
leave and goes before any new one. Their first kernel loads, host copies and Python then overlap
one another's instead of leaving the device idle under an exclusive hold; whether that beats the
time-slicing it costs them is measured in docs/BENCHMARKS.md before it becomes the default. On the
CPU every holder is alone: untimed work on shared cores would slow a timed one, which the device's
disturbance checks cannot see there.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading

DEFAULT_SHARERS = 1


def timing_cpus(threads: int) -> list[int]:
    """The cores CPU timing runs on: the last `threads` this process may use, the same for every
    timed process, so a candidate's blocks and the eager baseline's blocks between them
    (runner/host/pairing.py) meet the same core and its neighbours' load, not whichever core the
    scheduler gave each process (on a shared host a per-core difference moved whole runs by
    20% or more, docs/BENCHMARKS.md). CPU 0, which takes most of the host's housekeeping, last."""
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[-max(1, min(threads, len(allowed))):]


def sharers() -> int:
    try:
        return max(1, int(os.environ.get("KERNELLAB_DEVICE_SHARERS", DEFAULT_SHARERS)))
    except ValueError:
        return DEFAULT_SHARERS


class _Gate:
    """This process's side: shared holders up to a limit, or one exclusive holder; an exclusive
    request that waits stops new shared holders from coming in, so timings are not starved."""

    def __init__(self):
        self._changed = threading.Condition()
        self.shared = 0
        self.exclusive = False
        self.waiting = 0

    def enter(self, shared: bool, limit: int) -> None:
        with self._changed:
            if shared:
                self._changed.wait_for(lambda: not self.exclusive and not self.waiting and self.shared < limit)
                self.shared += 1
                return
            self.waiting += 1
            try:
                self._changed.wait_for(lambda: not self.exclusive and not self.shared)
            finally:
                self.waiting -= 1
            self.exclusive = True

    def leave(self, shared: bool) -> None:
        with self._changed:
            if shared:
                self.shared -= 1
            else:
                self.exclusive = False
            self._changed.notify_all()


_gates = {"cpu": _Gate(), "cuda": _Gate()}


class DeviceLock:
    """Nothing else runs on a GPU while a candidate or a baseline is timed there: a gate inside this
    process and a file lock across processes (several workers on one host; shared holders take it
    shared). On the CPU the lock is this process's only: timings on shared cores disturb each other
    as well. `shared` (untimed work) is honoured on the GPU only, and only where sharers() > 1."""

    def __init__(self, device: str, shared: bool = False):
        self.device = device
        self._limit = sharers()
        self.shared = bool(shared) and device == "cuda" and self._limit > 1
        self._file = None

    def acquire(self) -> "DeviceLock":
        _gates[self.device].enter(self.shared, self._limit)
        if self.device != "cuda":
            return self
        which = os.environ.get("CUDA_VISIBLE_DEVICES", "all").replace(",", "_") or "all"
        try:
            self._file = open(os.path.join(tempfile.gettempdir(), f"kernellab-gpu-{which}.lock"), "w")
            fcntl.flock(self._file, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None
        _gates[self.device].leave(self.shared)
