"""The parent's own clock over the candidate's calls: a check on the per-call times the
candidate's process reports, which the candidate could forge (patch the event timer, send
other samples).

After its timed loop the sandbox announces the median it reports; the parent then commands
batches of back-to-back calls, a small and a large one, and times each from sending the
command to the sandbox's "done" on its own monotonic clock. The difference of the two
batches over the difference of their sizes is a per-call time in which the fixed costs
(messages, synchronize, the device-side wait each batch is queued behind) cancel. Calls
back to back with a warm L2 are no slower than the timed calls, which flush L2 first, so an
honest median is not lower than that slope; one lower by more than max(10%, 20 µs) is
measured again (up to ROUNDS rounds, the fastest batch of each size kept), and if it
persists it is `rejected` where the device was quiet (NVML, gpustate.py) and noisy where it
was not.

On the CPU a wall clock says little on cores shared with other work (a batch's sum takes in
every spike of the host's load that a median leaves out: three times the median was seen on
two busy cores). There the parent reads, from the kernel, the CPU time the sandbox's
processes ran during each batch (`/proc/*/task/*/schedstat`; time spent waiting for a core
is not in it), and the slope of that per thread the sandbox may use is the per-call time an
honest median is not below; a median under half of it, after five rounds, is `rejected`.
Without those readings the wall-clock slope serves, rejecting only past three times it.

Plain Python: the parent never imports torch.
"""

from __future__ import annotations

import math
import os

from .procs import parent_pid

ROUNDS = {"cuda": 3, "cpu": 5}  # shared cores spike: the fastest of more rounds
TARGET_MS = 20.0  # work in the large batch
SMALL, LARGE_MIN, LARGE_MAX = 4, 8, 64  # LARGE_MAX bounds the launches queued behind one wait
COVER_MAX_MS = 500.0
CPU_FACTOR = 2.0  # CPU time per call can grow with a busy host's caches, never by half
WALL_FACTOR = 3.0  # without CPU-time readings: what no load on the host explains


def tolerance_ms(slope_ms: float) -> float:
    return max(0.1 * slope_ms, 0.02)


class BatchClock:
    """One sandbox run's batches: `on_message` answers the sandbox's batch messages; `verdict`
    judges the median it finally reports."""

    def __init__(self, device: str, *, rounds: int | None = None, threads: int = 1):
        self.device, self.rounds, self.threads = device, rounds or ROUNDS.get(device, 3), max(1, int(threads))
        self.claimed: float | None = None
        self.sizes: tuple[int, int] | None = None
        self.cover_ms = 0.0
        self.walls: dict[int, list[float]] = {}
        self.cpus: dict[int, list[float]] = {}  # CPU milliseconds the sandbox ran per batch (CPU device)
        self._plan: list[int] = []
        self._sent_at: float | None = None
        self._sent_cpu: float | None = None
        self._sent_n = 0
        self.done = False

    def on_message(self, message: dict, now: float, cpu_s: float | None = None) -> dict | None:
        """The command to send back (a batch size, 0 to end), or None for nothing. `cpu_s`: the
        sandbox's CPU seconds so far (`cpu_seconds`), read when the message arrived."""
        at = message.get("at")
        if at == "ready" and self.claimed is None:
            median, launch = message.get("median_ms"), message.get("launch_ms")
            if not (_positive(median) and _positive(launch, zero=True)):
                self.done = True
                return {"batch": 0}
            self.claimed = float(median)
            large = int(min(LARGE_MAX, max(LARGE_MIN, math.ceil(TARGET_MS / self.claimed))))
            self.sizes = (SMALL, large)
            # every launch of the large batch queued before the GPU gets to it, with room to spare
            self.cover_ms = min(COVER_MAX_MS, 2.0 * float(launch) * large + 0.2) if self.device == "cuda" else 0.0
            self._plan = [SMALL, large]
            return self._next(now, cpu_s)
        if at == "done" and self._sent_at is not None and message.get("n") == self._sent_n:
            self.walls.setdefault(self._sent_n, []).append((now - self._sent_at) * 1000)
            if cpu_s is not None and self._sent_cpu is not None:
                self.cpus.setdefault(self._sent_n, []).append((cpu_s - self._sent_cpu) * 1000)
            self._sent_at = None
            if not self._plan:
                if self.slope_ms() is None or not self._suspicious(self.claimed) \
                        or len(self.walls.get(SMALL, [])) >= self.rounds:
                    self.done = True
                    return {"batch": 0}
                self._plan = [SMALL, self.sizes[1]]
            return self._next(now, cpu_s)
        return None

    def _next(self, now: float, cpu_s: float | None) -> dict:
        self._sent_n = self._plan.pop(0)
        self._sent_at, self._sent_cpu = now, cpu_s
        return {"batch": self._sent_n, "cover_ms": self.cover_ms}

    def _by_cpu_time(self) -> bool:
        return self.device == "cpu" and self.sizes is not None and all(self.cpus.get(n) for n in self.sizes)

    def slope_ms(self) -> float | None:
        """Per call: the wall clock's slope on the GPU; on the CPU the slope of the sandbox's CPU time
        per thread it may use, where the readings exist."""
        if self.sizes is None:
            return None
        small, large = self.sizes
        if self._by_cpu_time():
            return max(0.0, (min(self.cpus[large]) - min(self.cpus[small])) / (large - small) / self.threads)
        if not self.walls.get(small) or not self.walls.get(large):
            return None
        return max(0.0, (min(self.walls[large]) - min(self.walls[small])) / (large - small))

    def _suspicious(self, median_ms: float | None) -> bool:
        slope = self.slope_ms()
        if slope is None or median_ms is None:
            return False
        if self.device == "cpu":
            return median_ms < slope / (CPU_FACTOR if self._by_cpu_time() else WALL_FACTOR)
        return median_ms < slope - tolerance_ms(slope)

    def verdict(self, median_ms: float, disturbance: str | None) -> tuple[str, str] | None:
        """('rejected', why) or ('noisy', why) for a reported median the batches do not bear out;
        None when they do. `disturbance` is what NVML saw around the batches (None: quiet)."""
        slope = self.slope_ms()
        if slope is None:
            return "rejected", "the sandbox did not run the batches the parent's clock commands"
        if self.claimed is None or not math.isclose(median_ms, self.claimed, rel_tol=1e-9, abs_tol=1e-12):
            return "rejected", "the sandbox reported another median than the one it announced before the batches"
        if not self._suspicious(median_ms):
            return None
        rounds = len(self.walls.get(self.sizes[0], []))
        clock = "of CPU time" if self._by_cpu_time() else "per call"
        why = (f"the reported per-call time {median_ms:.4f} ms is below what the parent's clock allows: "
               f"{slope:.4f} ms {clock} over batches of {self.sizes[0]} and {self.sizes[1]} calls "
               f"({rounds} rounds)")
        if self.device == "cuda":
            if disturbance:
                return "noisy", f"{why}, on a disturbed device ({disturbance})"
            return "rejected", f"{why}, on a quiet device"
        return "rejected", why


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds run so far by `pid` and every process below it, from the kernel's per-thread
    accounting (`schedstat`: time on a CPU, in ns); None where /proc cannot tell."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        parent = parent_pid(name) if name.isdigit() else None
        if parent is not None:
            children.setdefault(parent, []).append(int(name))
    total, found, todo = 0, False, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/schedstat") as handle:
                    total += int(handle.read().split()[0])
                found = True
            except (OSError, IndexError, ValueError):
                continue
    return total / 1e9 if found else None


def _positive(value, zero: bool = False) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and (value >= 0 if zero else value > 0))
