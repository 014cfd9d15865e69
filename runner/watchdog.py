"""A limit per call of the candidate's forward, so a kernel that spins costs seconds, not the
whole run's timeout.

The first FREE_CALLS calls are bounded only by the run's timeout (they may JIT-compile or
autotune). From the next one on, the sandbox's side (`Beats`) tells the parent every BEAT_S how
long the running call has lasted; the parent (`CallLimit`, in Sandbox.run) stops the sandbox
when a call runs past its limit, or when the beats stop for longer than the limit (a call that
holds the GIL starves the beating thread). The limit comes from the parent's job, never from
the sandbox. A candidate that fakes beats only gets back to the run's timeout.

Plain Python, no torch: both sides import it.
"""

from __future__ import annotations

import os
import threading
import time

FREE_CALLS = 2
FLOOR_S = 5.0
EAGER_FACTOR = 100
BEAT_S = 0.5
SILENCE_GRACE_S = 1.0


def limit_s(eager_ms: float | None) -> float:
    """max(floor, 100x the eager time): far past any honest call of the problem. The floor
    can be lowered with KERNELLAB_CALL_LIMIT_FLOOR_S (tests)."""
    floor = float(os.environ.get("KERNELLAB_CALL_LIMIT_FLOOR_S", FLOOR_S))
    return max(floor, EAGER_FACTOR * (eager_ms or 0.0) / 1000.0)


# --- the sandbox's side ---------------------------------------------------------------------

class Beats:
    """Wraps the candidate's forward: counts calls and, from call FREE_CALLS + 1 on, beats the
    parent from a thread with how long the running call has lasted."""

    def __init__(self, send, *, every_s: float = BEAT_S):
        self._send, self._every = send, every_s
        self.calls = 0
        self._started: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._clock = time.monotonic  # captured before candidate code runs

    def wrap(self, forward):
        # Started before any call: the judge's thread checks see it as already there.
        self._thread = threading.Thread(target=self._beat, daemon=True, name="call-watch")
        self._thread.start()

        def watched(*inputs):
            self.calls += 1
            if self.calls == FREE_CALLS + 1:  # arms the parent, even if this call never lets the thread run
                self._send("beat", call=self.calls, running_s=0.0)
            if self.calls > FREE_CALLS:
                self._started = self._clock()
            try:
                return forward(*inputs)
            finally:
                self._started = None
        return watched

    def _beat(self) -> None:
        while not self._stop.wait(self._every):
            if self.calls <= FREE_CALLS:
                continue
            started = self._started
            running = self._clock() - started if started is not None else 0.0
            self._send("beat", call=self.calls, running_s=round(running, 3))

    def stop(self) -> None:
        """Before the verdict is sent: the channel has one writer again, and the parent is told
        that no call is watched any more (what follows is bounded by the run's timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            if self.calls > FREE_CALLS:
                self._send("beat", call=self.calls, running_s=0.0, done=True)


# --- the parent's side ----------------------------------------------------------------------

class CallLimit:
    """The parent's view of the beats; `overdue` says why to stop the sandbox, else ''."""

    def __init__(self, limit: float | None):
        self.limit = limit if limit and limit > 0 else None
        self.last_beat: float | None = None
        self.call = 0
        self.running_s = 0.0

    def beat(self, message: dict, now: float) -> None:
        if self.limit is None:
            return
        if message.get("done") is True:
            self.last_beat = None
            return
        call, running = message.get("call"), message.get("running_s")
        if isinstance(call, int) and isinstance(running, (int, float)) and 0 <= running < 1e7:
            self.last_beat, self.call, self.running_s = now, call, float(running)

    def overdue(self, now: float) -> str:
        if self.limit is None or self.last_beat is None:
            return ""
        running = self.running_s + (now - self.last_beat if self.running_s > 0 else 0.0)
        silent = now - self.last_beat
        if running > self.limit or silent > self.limit + SILENCE_GRACE_S:
            lasted = max(running, silent)
            return (f"call {self.call} of forward ran {lasted:.1f} s, past its limit of {self.limit:.1f} s "
                    f"(max({FLOOR_S:g} s, {EAGER_FACTOR}x the eager time)); it was stopped")
        return ""

    def check_at(self) -> float:
        """The monotonic time by which `overdue` should be asked again (inf when unarmed)."""
        if self.limit is None or self.last_beat is None:
            return float("inf")
        if self.running_s > 0:
            return self.last_beat + self.limit - self.running_s + 0.01
        return self.last_beat + self.limit + SILENCE_GRACE_S + 0.01
