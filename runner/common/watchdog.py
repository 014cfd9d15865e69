"""A limit per call of the candidate's forward, so a kernel that spins costs seconds, not the
whole run's timeout.

The first FREE_CALLS calls may JIT-compile or autotune, so their host-side time is bounded
only by the run's timeout. A wait for the GPU is never compilation: from call 1 on, the time
spent in a device synchronize (the harness's after each call, or the candidate's own
torch.cuda.synchronize inside forward) counts against the limit, so a kernel that never ends
is stopped within seconds even on its first launch. From call FREE_CALLS + 1 on, the whole call
counts as well. The sandbox's side (`Beats`) tells the parent every BEAT_S how long the running
call (or wait) has lasted; the parent (`CallLimit`, in Sandbox.run) stops the sandbox when it
runs past the limit, or, once the whole call counts, when the beats stop for longer than the
limit (a call that holds the GIL starves the beating thread; waits release it). The limit
comes from the parent's job, never from the sandbox. A candidate that fakes beats only gets
back to the run's timeout.

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
    """Wraps the candidate's forward and the device's waits: counts calls and beats the parent
    from a thread with how long the running wait (from call 1 on) or call (from call
    FREE_CALLS + 1 on) has lasted."""

    def __init__(self, send, *, every_s: float = BEAT_S):
        self._send, self._every = send, every_s
        self.calls = 0
        self._started: float | None = None
        self._waiting: float | None = None
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

    def count_waits(self, owner, name: str) -> None:
        """Replace owner.name (a synchronize) by one whose duration counts as GPU time of the
        running call. Done before the candidate is imported and before the guard's snapshot."""
        wait = getattr(owner, name)

        def counted(*args, **kwargs):
            if self._waiting is not None or not self.calls:  # nested, or before the first call
                return wait(*args, **kwargs)
            self._waiting = self._clock()
            try:
                return wait(*args, **kwargs)
            finally:
                self._waiting = None
        setattr(owner, name, counted)

    def _beat(self) -> None:
        while not self._stop.wait(self._every):
            now = self._clock()
            waiting = self._waiting
            waited = now - waiting if waiting is not None else 0.0
            if self.calls <= FREE_CALLS:
                if waited > 0:
                    self._send("beat", call=self.calls, running_s=round(waited, 3), free=True)
                continue
            started = self._started
            running = now - started if started is not None else 0.0
            self._send("beat", call=self.calls, running_s=round(max(running, waited), 3))

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
        self.waited_s = 0.0  # of a free call: only a reported wait counts, never silence

    def beat(self, message: dict, now: float) -> None:
        if self.limit is None:
            return
        if message.get("done") is True:
            self.last_beat, self.waited_s = None, 0.0
            return
        call, running = message.get("call"), message.get("running_s")
        if not (isinstance(call, int) and isinstance(running, (int, float)) and 0 <= running < 1e7):
            return
        if message.get("free") is True:
            self.call, self.waited_s = call, float(running)
        else:
            self.last_beat, self.call, self.running_s = now, call, float(running)

    def overdue(self, now: float) -> str:
        if self.limit is None:
            return ""
        if self.waited_s > self.limit:
            return (f"call {self.call} of forward waited {self.waited_s:.1f} s for the GPU, past its limit of "
                    f"{self.limit:.1f} s (max({FLOOR_S:g} s, {EAGER_FACTOR}x the eager time)); it was stopped")
        if self.last_beat is None:
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
