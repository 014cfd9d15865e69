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
was not. A refusal by the wall clock is judged once more in a fresh sandbox before it stands
(evaluation.py): a moment of the host's load no reading here caught reaches one run, not two.

On the CPU a wall clock says little on cores shared with other work (a batch's sum takes in
every spike of the host's load that a median leaves out: three times the median was seen on
two busy cores). There the parent reads, from the kernel, the CPU time the sandbox's
processes ran during each batch (its cgroup's CPU accounting, which keeps the time of
processes that exited meanwhile; time spent waiting for a core is not in it), and the slope
of that per thread the sandbox may use is the per-call time an honest median is not below; a
median under half of it, after five rounds, is `rejected`. Without those readings (no cgroup)
the wall-clock slope serves, rejecting only past three times it.

On the GPU a forward that waits for the device on every call (a synchronize, a side stream's
wait) pays in each batch call a launch that the timed loop's cover hides: its honest median can
sit below the slope by up to LAUNCH_EXPOSED_MS beyond the tolerance (40 µs seen with eight
test processes on the host). Within that band the slope, the parent's own figure, becomes the
time (`clocked`), so a forged median gains nothing there; below it the rules above hold.

A batch's wall clock also takes in the time the sandbox's threads, and the parent's threads that
carry its messages, waited for a CPU on a busy host (`schedstat`'s run-queue time, of the threads
alive at each reading): a batch that waited
more than HOST_WAIT of its wall is disturbed. The slope is taken over the undisturbed batches where each
size has one. Rounds after a suspicious one wait ROUND_PAUSE_S first, so that a passing disturbance
(another process starting on the GPU) can end; a suspicious slope that rests on disturbed batches
gets more rounds (up to DISTURBED_ROUNDS), and one that still does is noisy, never rejected: a
busy host says nothing about the kernel. A candidate that makes its own threads wait only makes
itself noisy, which keeps it off every ranking.

Plain Python: the parent never imports torch.
"""

from __future__ import annotations

import math

from ..common.findings import RULE
from ..common.procs import descendants, sched_seconds, task_waits

ROUNDS = {"cuda": 3, "cpu": 5}  # shared cores spike: the fastest of more rounds
DISTURBED_ROUNDS = 8
ROUND_PAUSE_S = 0.2  # between rounds after a suspicious one
HOST_WAIT, HOST_WAIT_MIN_MS = 0.05, 0.2  # of a batch's wall: what a quiet host never makes it wait
TARGET_MS = 20.0  # work in the large batch
SMALL, LARGE_MIN, LARGE_MAX = 4, 8, 64  # LARGE_MAX bounds the launches queued behind one wait
COVER_MAX_MS = 500.0
COVER_FACTOR, COVER_EXTRA_MS = 4.0, 5.0  # device time per batch: a few ms, once or twice a candidate
LAUNCH_EXPOSED_MS = 0.05  # a launch and the host's return from a wait, on a busy host
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
        self.waits: dict[int, list[float | None]] = {}  # milliseconds it waited for a CPU per batch
        self._plan: list[int] = []
        self._sent_at: float | None = None
        self._sent_cpu: float | None = None
        self._sent_wait: float | None = None
        self.pause_s = 0.0
        self._sent_n = 0
        self.done = False

    def on_message(self, message: dict, now: float, cpu_s: float | None = None,
                   wait_s: float | None = None) -> dict | None:
        """The command to send back (a batch size, 0 to end), or None for nothing. `cpu_s`, `wait_s`:
        the sandbox's seconds so far on a CPU and waiting for one (`readings`), read when the
        message arrived. Before a batch command goes out the caller waits `pause_s` and may say
        when it sent it (`sending`)."""
        at = message.get("at")
        if at == "ready" and self.claimed is None:
            median, launch = message.get("median_ms"), message.get("launch_ms")
            if not (_positive(median) and _positive(launch, zero=True)):
                self.done = True
                return {"batch": 0}
            self.claimed = float(median)
            large = int(min(LARGE_MAX, max(LARGE_MIN, math.ceil(TARGET_MS / self.claimed))))
            self.sizes = (SMALL, large)
            # every launch of the large batch queued before the GPU gets to it, with room to spare: the
            # launch time is one call's, and a busy host launches several times slower (a 256x256 matmul
            # measured at 15 µs a launch took about 80 µs a call in a batch, outrunning a 2x cover)
            self.cover_ms = min(COVER_MAX_MS, COVER_FACTOR * float(launch) * large + COVER_EXTRA_MS) \
                if self.device == "cuda" else 0.0
            self._plan = [SMALL, large]
            return self._next(now, cpu_s, wait_s)
        if at == "done" and self._sent_at is not None and message.get("n") == self._sent_n:
            self.walls.setdefault(self._sent_n, []).append((now - self._sent_at) * 1000)
            if cpu_s is not None and self._sent_cpu is not None:
                self.cpus.setdefault(self._sent_n, []).append((cpu_s - self._sent_cpu) * 1000)
            waited = None if wait_s is None or self._sent_wait is None else (wait_s - self._sent_wait) * 1000
            self.waits.setdefault(self._sent_n, []).append(waited)
            self._sent_at = None
            self.pause_s = 0.0
            if not self._plan:
                rounds = len(self.walls.get(SMALL, []))
                if self.slope_ms() is None or not self._suspicious(self.claimed) \
                        or rounds >= (DISTURBED_ROUNDS if self._host_decides() else self.rounds):
                    self.done = True
                    return {"batch": 0}
                self._plan = [SMALL, self.sizes[1]]
                self.pause_s = ROUND_PAUSE_S  # a passing disturbance (a process starting on the GPU) ends
            return self._next(now, cpu_s, wait_s)
        return None

    def _next(self, now: float, cpu_s: float | None, wait_s: float | None) -> dict:
        self._sent_n = self._plan.pop(0)
        self._sent_at, self._sent_cpu, self._sent_wait = now, cpu_s, wait_s
        return {"batch": self._sent_n, "cover_ms": self.cover_ms}

    def sending(self, at: float, cpu_s: float | None = None, wait_s: float | None = None) -> None:
        """The batch command just answered goes out now (after the caller's readings and pause)."""
        if self._sent_at is not None:
            self._sent_at, self._sent_cpu, self._sent_wait = at, cpu_s, wait_s

    def _disturbed(self, n: int, k: int) -> bool:
        waited = self.waits[n][k]  # recorded beside every wall clock
        return waited is not None and waited > max(HOST_WAIT_MIN_MS, HOST_WAIT * self.walls[n][k])

    def host_waits_ms(self) -> list[float]:
        """The CPU waits of the batches a busy host disturbed, in milliseconds."""
        return [self.waits[n][k] for n in self.walls for k in range(len(self.walls[n])) if self._disturbed(n, k)]

    def _clean(self, n: int) -> list[float]:
        return [w for k, w in enumerate(self.walls.get(n, [])) if not self._disturbed(n, k)]

    def _rests_on_disturbed(self) -> bool:
        return self.sizes is not None and not all(self._clean(n) for n in self.sizes)

    def _host_decides(self) -> bool:
        """Whether the wall-clock slope still rests on batches a busy host disturbed."""
        return self._rests_on_disturbed() and not self._by_cpu_time()

    def by_wall(self) -> bool:
        """Whether the wall clock judged: on the GPU, or on a CPU without the cgroup's readings."""
        return self.sizes is not None and not self._by_cpu_time()

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
        walls = self.walls if self._rests_on_disturbed() else {n: self._clean(n) for n in self.sizes}
        return max(0.0, (min(walls[large]) - min(walls[small])) / (large - small))

    def _suspicious(self, median_ms: float | None) -> bool:
        slope = self.slope_ms()
        if slope is None or median_ms is None:
            return False
        if self.device == "cpu":
            return median_ms < slope / (CPU_FACTOR if self._by_cpu_time() else WALL_FACTOR)
        return median_ms < slope - tolerance_ms(slope)

    def verdict(self, median_ms: float, disturbance: str | None) -> tuple[str, str] | None:
        """('rejected', why) or ('noisy', why) for a reported median the batches do not bear out,
        ('clocked', why) for one within a launch of the slope (on the GPU: the slope is the time);
        None when they bear it out. `disturbance` is what NVML saw around the batches (None: quiet)."""
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
        if self._host_decides():
            waits = self.host_waits_ms()
            return "noisy", (f"{why}, on a busy host (the sandbox, or the parent's threads reading it, waited up to "
                             f"{max(waits):.1f} ms for a CPU in {len(waits)} of its batches)")
        if self.device == "cuda":
            if median_ms >= slope - tolerance_ms(slope) - LAUNCH_EXPOSED_MS:
                return "clocked", (f"timed at the parent's clock, {slope:.4f} ms per call over batches of "
                                   f"{self.sizes[0]} and {self.sizes[1]} calls, not the {median_ms:.4f} ms its "
                                   "timed calls reported: each call waits for the device, so a batch's calls each "
                                   "pay a launch the timed calls hide")
            if disturbance:
                return "noisy", f"{why}, on a disturbed device ({disturbance})"
            return "rejected", f"{why}, on a quiet device"
        return "rejected", why


def apply(clock: BatchClock, records: list[dict], result: dict) -> None:
    """The clock's verdict on a correct result's reported median, into `result`: `rejected` (marked
    `wall_clock_refused` where the wall clock judged, which evaluation.py judges once more), the slope as
    the time (`clocked`), or `batch_noisy`; its own numbers go beside the NVML readings of the last batch."""
    batches = [r for r in records if r["what"] == "batch"]
    median = result["timing"]["median_ms"]
    found = clock.verdict(median, batches[-1]["disturbance"] if batches else None)
    if batches:
        batches[-1].update(slope_ms=clock.slope_ms(), reported_ms=median, sizes=list(clock.sizes or []),
                           walls_ms={str(n): w for n, w in clock.walls.items()})
    if found and found[0] == "rejected":
        result.update(status="rejected", reason_code=RULE, reason=found[1], wall_clock_refused=clock.by_wall())
    elif found and found[0] == "clocked":  # the parent's figure stands; the samples stay what was reported
        result["timing"].update(reported_median_ms=median, median_ms=clock.slope_ms(), clocked=found[1])
    elif found:
        result["batch_noisy"] = found[1]


def readings(pid: int, pids: list[int] | None = None, cgroup_s: float | None = None,
             carriers=()) -> tuple[float | None, float | None] | None:
    """(running, waiting) seconds so far of the sandbox's processes; None when neither can be read.
    Running is `cgroup_s`, the CPU time its cgroup accounts, exited processes included; without
    it None (the wall clock then serves): live threads' counts miss a helper process that starts
    and exits between two readings, and a candidate could hide its work there. Waiting, a busy
    host's sign rather than the kernel's work, from the live threads of `pids` (where its
    cgroup lists them), else of `pid` and every process below it, plus the parent's own threads
    that carry the messages, `carriers` ((pid, tid) pairs): a batch's "done" read late is as long
    a wall as a batch run late."""
    live = sched_seconds(pids if pids else descendants(pid))
    if live is None and cgroup_s is None:
        return None
    return cgroup_s, (live[1] + task_waits(carriers) if live else None)


def _positive(value, zero: bool = False) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and (value >= 0 if zero else value > 0))
