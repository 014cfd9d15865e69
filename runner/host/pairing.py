"""On the CPU, the eager baseline timed in blocks between the candidate's blocks of timed calls:
the parent's side. On shared cores a baseline measured minutes earlier follows the load, not the
kernel (docs/BENCHMARKS.md, CPU playbook kernels); blocks that alternate see the same load, so
their ratio holds.

The eager blocks run in the truths' sandbox, which runs only the problem; the candidate's blocks
are slices of the timed samples its verdict reports, the ones the batch clock checks. Once the
truths are made, that sandbox lets go of the device and its reader hands the sandbox over here
(`serve`) until the candidate's timing is over; the candidate's reader asks for each eager block
(`on_message`) while the candidate waits, so the two never run at once.
"""

from __future__ import annotations

import math
import queue
import statistics
import threading
import time

from ..common.timing import median_ci95

WAIT_S = 60.0  # for an eager block, or for the truths' sandbox to be ready
IDLE_SHARE = 0.1  # of an eager block's time the candidate's processes may spend on the CPU meanwhile
UNACCOUNTED = ("the candidate's sandbox has no cgroup that accounts its CPU time, exited processes "
               "included, so work outside its calls while the eager baseline was timed could not be seen")


class Pairing:
    def __init__(self) -> None:
        self.ready = threading.Event()  # the truths' sandbox is here to serve, or gone
        self._over = threading.Event()
        self._sandbox, self._nonce = None, None
        self._bounds: list[int] = []  # the candidate's timed calls so far, at each eager block
        self._size = 0  # calls per block
        self.eager: list[list[float]] = []
        self.idle_cpu_s = 0.0
        self.eager_s = 0.0
        self.dropped = ""  # why the pairing stopped early, if it did

    def handle(self, sandbox, job: str, message: dict, nonce: str, deadline: float, lock):
        """A {"kind": "pair"} message in Sandbox.run of `sandbox`, which runs `job`: (its deadline,
        its device lock) after it. Only a truths job serves eager blocks, only an evaluation asks."""
        if job == "evaluate":
            reply, spent = self.on_message(message, sandbox.cpu_seconds)
            sandbox.send(reply)
            return deadline + spent, lock
        if job != "truths" or message.get("at") != "ready":
            return deadline, lock
        began = time.monotonic()
        if not self.ready.is_set():
            if lock is not None:  # its truths are made: the device goes to the candidate
                lock.release()
                lock = None
            self.serve(sandbox, nonce, deadline)
        sandbox.send({"block": 0})  # the end of its pair loop
        return deadline + time.monotonic() - began, lock

    # --- the truths' sandbox's reader -----------------------------------------------------

    def serve(self, sandbox, nonce: str, until: float) -> None:
        """Lend `sandbox` (its child waiting in its pair loop) until the candidate is done."""
        self._sandbox, self._nonce = sandbox, nonce
        self.ready.set()
        self._over.wait(max(0.0, until - time.monotonic()))
        self._sandbox = None

    def gone(self) -> None:
        """The truths' sandbox has ended (or never served): nothing more to ask it."""
        if not self.ready.is_set():
            self.dropped = self.dropped or "the problem's sandbox was not there to time the eager baseline"
        self.ready.set()

    def close(self) -> None:
        self._over.set()

    # --- the candidate's reader -----------------------------------------------------------

    def on_message(self, message: dict, sched) -> tuple[dict, float]:
        """(reply, seconds spent) for the candidate's {"kind": "pair"} message. `sched()` reads the
        candidate sandbox's (running, waiting) CPU seconds, running from its cgroup (processes that
        exited meanwhile included): it is to idle while the eager block runs."""
        calls, size, end = message.get("calls"), message.get("n"), message.get("at") == "end"
        # Blocks of one size, each the calls timed since the last: the candidate cannot choose
        # which of its samples meet which eager block.
        expected = self._bounds[-1] + self._size if self._bounds else 0
        if not _count(calls) or calls != expected or (not end and (not _count(size) or not 0 < size <= 100_000
                                                                   or size != (self._size or size))):
            self._drop("the candidate's sandbox sent a malformed pairing request")
        if end or self.dropped or self._sandbox is None:
            if end and not self.dropped:
                self._bounds.append(calls)
            self.dropped = self.dropped or ("" if end else "the eager baseline's sandbox left")
            return {"go": False}, 0.0
        self._size = size
        began, before = time.monotonic(), _running(sched())
        if before is None:
            self._drop(UNACCOUNTED)
            return {"go": False}, 0.0
        self._sandbox.send({"block": size})
        samples = self._eager_reply(size, began + WAIT_S)
        after, spent = _running(sched()), time.monotonic() - began
        if samples is None:
            return {"go": False}, spent
        if after is None:
            self._drop(UNACCOUNTED)
            return {"go": False}, spent
        self.idle_cpu_s += max(0.0, after - before)
        self.eager_s += spent
        self._bounds.append(calls)
        self.eager.append(samples)
        return {"go": True}, spent

    def _eager_reply(self, size: int, deadline: float) -> list[float] | None:
        while True:
            try:
                message = self._sandbox.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return self._drop(f"no eager block within {WAIT_S:.0f} s")
            if message is None:
                self._sandbox.messages.put(None)  # its reader sees the end too
                return self._drop("the eager baseline's sandbox ended")
            if not isinstance(message, dict) or message.get("nonce") != self._nonce or message.get("kind") != "pair":
                continue
            samples = message.get("samples")
            if (isinstance(samples, list) and len(samples) == size
                    and all(isinstance(s, (int, float)) and math.isfinite(s) and s > 0 for s in samples)):
                return [float(s) for s in samples]
            return self._drop("the eager baseline's sandbox sent malformed samples")

    def _drop(self, why: str) -> None:
        self.dropped = self.dropped or why
        return None

    # --- the result ---------------------------------------------------------------------

    def summary(self, samples_ms: list[float]) -> dict | None:
        """Per block, median eager / median candidate; their median and its 95% CI. None when no
        block was paired; with `dropped` set, the ratio is not to be used."""
        ratios, eager = [], []
        if self._bounds and self._bounds[-1] != len(samples_ms) and not self.dropped:
            self.dropped = "the candidate's verdict holds other timed calls than its pairing requests"
        for k, block in enumerate(self.eager):
            if k + 1 >= len(self._bounds):
                break
            mine = samples_ms[self._bounds[k]:self._bounds[k + 1]]
            if not mine:
                continue
            ratios.append(statistics.median(block) / statistics.median(mine))
            eager += block
        if not ratios:
            return None
        dropped = self.dropped
        if not dropped and self.idle_cpu_s > IDLE_SHARE * self.eager_s:
            dropped = (f"the candidate's processes used {self.idle_cpu_s * 1000:.0f} ms of CPU while the eager "
                       f"baseline was timed ({self.eager_s * 1000:.0f} ms; its cgroup counts processes that "
                       "exited meanwhile): work outside its calls")
        ordered = sorted(ratios)
        return {"blocks": len(ratios), "calls_per_block": self._size,
                "eager_ms": statistics.median(eager), "speedup": statistics.median(ordered),
                "speedup_ci95": list(median_ci95(ordered)), "idle_cpu_ms": round(self.idle_cpu_s * 1000, 3),
                "dropped": dropped or None}


def _running(reading) -> float | None:
    """The running seconds of a (running, waiting) reading; None where it has none."""
    if not isinstance(reading, tuple) or not reading or reading[0] is None:
        return None
    return float(reading[0])


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
