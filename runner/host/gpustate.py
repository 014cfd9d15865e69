"""What the GPU was doing while a measurement was timed, read from NVML by the parent.

The sandbox cannot see this (its PID namespace hides the host's processes), so the parent
reads the device's clocks, throttle reasons and the processes that used its SMs, before and
after each timed measurement the judge announces, and answers whether to measure again. A
measurement is disturbed when a process other than the measured sandbox used the SMs in its
window (the pool's other sandboxes too: outside the device lock they should not),
when a throttle reason other than idle was set, when the SM clock moved (still ramping up:
the measurement then served as warm-up), or when the judge saw wall-clock time its events
did not (timing.unseen_work). A disturbed measurement is taken again, up to ATTEMPTS in all;
one still disturbed is kept and marked noisy with the reason, never rejected: a busy host
says nothing about the kernel.

The device is matched by UUID (the sandbox reports it; NVML ignores CUDA_VISIBLE_DEVICES).
NVML is imported lazily: CPU hosts have none. Readings come through `Source`, so the logic
here runs on the CPU with readings given by a test.
"""

from __future__ import annotations

import os
import time

from ..common.procs import parent_pid

ATTEMPTS = 3
CLOCK_MOVED = 0.05  # a relative change of the SM clock across one measurement
THROTTLE_NAMES = {
    0x1: "idle", 0x2: "applications clocks setting", 0x4: "software power cap", 0x8: "hardware slowdown",
    0x10: "sync boost", 0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
    0x80: "hardware power brake", 0x100: "display clock setting",
}
# Idle is the state between calls; the applications clocks are a setting, not a slowdown.
HARMLESS = 0x1 | 0x2


class Source:
    """Readings of one device: `read()` the clocks now, `processes(since_us)` the SM use of
    each process since a reading's time."""

    def read(self) -> dict:
        raise NotImplementedError

    def processes(self, since_us: int) -> list[tuple[int, int]]:
        raise NotImplementedError


class NvmlSource(Source):
    _known: dict[str, "NvmlSource | None"] = {}  # one per device and process: NVML's start costs ms

    def __init__(self, nvml, handle):
        self.nvml, self.handle = nvml, handle

    @classmethod
    def for_uuid(cls, uuid: str | None) -> "NvmlSource | None":
        if not uuid:
            return None
        if uuid not in cls._known:
            try:
                import pynvml  # nvidia-ml-py: read-only driver state, no CUDA context

                pynvml.nvmlInit()  # counted by NVML: safe beside gpumem's
                cls._known[uuid] = cls(pynvml, pynvml.nvmlDeviceGetHandleByUUID(uuid))
            except Exception:
                cls._known[uuid] = None
        return cls._known[uuid]

    def read(self) -> dict:
        nvml, handle = self.nvml, self.handle
        reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) \
            or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        return {"at_us": int(time.time() * 1e6),
                "sm_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                "mem_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
                "throttle": int(reasons(handle))}

    def processes(self, since_us: int) -> list[tuple[int, int]]:
        try:
            samples = self.nvml.nvmlDeviceGetProcessUtilization(self.handle, since_us)
        except Exception:  # NVML_ERROR_NOT_FOUND: no process sampled in the window
            return []
        return [(s.pid, s.smUtil) for s in samples if s.timeStamp >= since_us]


def source_for(device: str, environment: dict) -> Source | None:
    """The readings of the sandbox's device: NVML's, by the UUID the sandbox reported."""
    if device != "cuda":
        return None
    return NvmlSource.for_uuid(environment.get("device_uuid"))


def ours(pid: int, root: int | None = None) -> bool:
    """Whether `pid` is `root` (this process by default) or one of its descendants: for a
    measurement, the measured sandbox and whatever it started, whose work is not a disturbance."""
    root = os.getpid() if root is None else root
    for _ in range(64):
        if pid == root:
            return True
        if pid <= 1:
            return False
        pid = parent_pid(pid)
        if pid is None:
            return False
    return False


def throttle_names(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_NAMES.items() if mask & bit]


def disturbance(before: dict, after: dict, processes: list[tuple[int, int]], is_ours=ours) -> str:
    """Why the window between two readings was disturbed, '' when it was quiet."""
    reasons = []
    others = sorted({pid for pid, sm in processes if sm > 0 and not is_ours(pid)})
    if others:
        reasons.append(f"other processes used the GPU's SMs during the timing (pid {', '.join(map(str, others[:5]))})")
    slowed = throttle_names((before["throttle"] | after["throttle"]) & ~HARMLESS)
    if slowed:
        reasons.append(f"the GPU's clocks were held back ({', '.join(slowed)})")
    low, high = sorted((before["sm_mhz"], after["sm_mhz"]))
    if high and (high - low) / high > CLOCK_MOVED:
        reasons.append(f"the SM clock moved from {before['sm_mhz']} to {after['sm_mhz']} MHz during the timing")
    return "; ".join(reasons)


class Measurements:
    """The parent's side of the judge's timing messages, for one sandbox run. Each timed
    measurement (`what`: eager, compile, candidate) gets up to `attempts` tries."""

    def __init__(self, source: Source | None, *, attempts: int = ATTEMPTS, is_ours=ours):
        self.source, self.attempts, self.is_ours = source, attempts, is_ours
        self.records: list[dict] = []
        self._before: dict | None = None

    def on_timing(self, message: dict) -> dict | None:
        """The reply to send the judge, or None (a beginning needs none)."""
        what = str(message.get("what"))[:16]
        if message.get("at") == "begin":
            self._before = self._read()
            return None
        before, after = self._before, self._read()
        self._before = None
        gap = message.get("gap") if isinstance(message.get("gap"), str) else ""
        reasons = [gap[:300]] if gap else []
        record = {"what": what, "attempt": 1 + sum(1 for r in self.records if r["what"] == what)}
        if before is not None and after is not None:
            processes = self.source.processes(before["at_us"])
            found = disturbance(before, after, processes, self.is_ours)
            reasons = ([found] if found else []) + reasons
            record.update(sm_mhz=[before["sm_mhz"], after["sm_mhz"]], mem_mhz=[before["mem_mhz"], after["mem_mhz"]],
                          throttle=throttle_names(before["throttle"] | after["throttle"]))
        record["disturbance"] = "; ".join(reasons) or None
        self.records.append(record)
        return {"again": bool(reasons) and record["attempt"] < self.attempts}

    def _read(self) -> dict | None:
        if self.source is None:
            return None
        try:
            return self.source.read()
        except Exception:
            return None

    def noisy(self, *whats: str) -> str | None:
        """The disturbance of the last try of each of `whats`, where one was left; else None."""
        reasons = []
        for what in whats:
            tries = [r for r in self.records if r["what"] == what]
            if tries and tries[-1]["disturbance"]:
                reasons.append(f"{what}: {tries[-1]['disturbance']} (after {len(tries)} tries)")
        return "; ".join(reasons) or None

    def of(self, *whats: str) -> list[dict]:
        return [r for r in self.records if r["what"] in whats]
