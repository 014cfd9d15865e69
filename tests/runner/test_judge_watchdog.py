"""The per-call watchdog: from the third call on, a forward far past its limit is stopped
at once and judged `timeout`; the next candidate is judged right (real CPU sandboxes). A wait
for the GPU counts from the first call (its sandbox side here; the GPU tests run it whole)."""

import threading
import time

import pytest

from runner.common import watchdog

from . import sources

# The C kernel spins from its third call on, without the GIL (ctypes releases it): the
# sandbox's beats report a call that keeps running.
SPINNING = sources.SILU_KERNEL.replace(
    "void silu(const float *x, float *y, int64_t n) {",
    "static int calls = 0;\nvoid silu(const float *x, float *y, int64_t n) {\n"
    "    if (++calls > 2) { volatile int spin = 1; while (spin) {} }")
# From its third call on, a regular expression that backtracks for ages while holding the GIL:
# the beats stop, and their silence is what the parent sees.
HOLDING_THE_GIL = "import re\nCALLS = []\n" + sources.SILU_KERNEL.replace(
    "        x = x.contiguous()\n",
    "        CALLS.append(1)\n        if len(CALLS) > 2:\n            re.match(r'(a|aa)*c', 'a' * 80)\n"
    "        x = x.contiguous()\n")


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [SPINNING, HOLDING_THE_GIL], ids=["spinning", "holding-the-gil"])
def test_a_spinning_forward_is_stopped_within_seconds(cpu_pool, monkeypatch, kernel):
    monkeypatch.setenv("KERNELLAB_CALL_LIMIT_FLOOR_S", "1")
    started = time.monotonic()
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, kernel, seed=3, timeout=120)
    took = time.monotonic() - started
    assert result["status"] == "timeout", result["reason"]
    assert "call 3 of forward ran" in result["reason"] and "past its limit of 1.0 s" in result["reason"]
    assert took < 30  # the run's timeout is 120 s
    after = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=3)
    assert after["status"] == "correct", after["reason"]


def test_limit_is_a_hundred_eager_calls_with_a_floor(monkeypatch):
    monkeypatch.delenv("KERNELLAB_CALL_LIMIT_FLOOR_S", raising=False)
    assert watchdog.limit_s(0.2) == 5.0
    assert watchdog.limit_s(None) == 5.0
    assert watchdog.limit_s(200.0) == pytest.approx(20.0)


def test_call_limit_from_beats():
    limit = watchdog.CallLimit(2.0)
    assert limit.overdue(100.0) == "" and limit.check_at() == float("inf")  # not armed before a beat
    limit.beat({"call": 3, "running_s": 0.0}, now=100.0)
    assert limit.overdue(102.5) == ""  # between calls: only silence counts
    assert "silent" not in limit.overdue(103.2) and "call 3" in limit.overdue(103.2)  # silent past 2 s + grace
    limit.beat({"call": 7, "running_s": 1.5}, now=104.0)
    assert limit.overdue(104.4) == ""
    assert "call 7 of forward ran 2.1 s" in limit.overdue(104.6)
    assert limit.check_at() == pytest.approx(104.51)
    limit.beat({"call": 7, "running_s": 0.0, "done": True}, now=104.1)
    assert limit.overdue(200.0) == ""  # disarmed: the rest is the run's timeout


def test_malformed_beats_are_ignored_and_no_limit_never_stops():
    limit = watchdog.CallLimit(2.0)
    limit.beat({"call": "x", "running_s": -1}, now=1.0)
    assert limit.overdue(50.0) == ""
    unlimited = watchdog.CallLimit(None)
    unlimited.beat({"call": 3, "running_s": 99.0}, now=1.0)
    assert unlimited.overdue(1000.0) == ""


class _Device:
    """Stands in for torch.cuda: a synchronize that waits until released."""

    def __init__(self):
        self.released = threading.Event()

    def synchronize(self):
        self.released.wait(10)


@pytest.mark.slow
def test_a_wait_for_the_device_beats_from_the_first_call():
    sent = []
    beats = watchdog.Beats(lambda kind, **fields: sent.append(fields), every_s=0.05)
    device = _Device()
    beats.count_waits(device, "synchronize")
    device.synchronize()  # before any call: not counted
    assert sent == []
    forward = beats.wrap(lambda: device.synchronize())
    waiter = threading.Thread(target=forward)
    waiter.start()
    time.sleep(0.4)
    device.released.set()
    waiter.join()
    beats.stop()
    free = [m for m in sent if m.get("free")]
    assert free and all(m["call"] == 1 for m in free)
    assert max(m["running_s"] for m in free) >= 0.25
    assert not any("done" in m for m in sent)  # no armed call to disarm


def test_a_free_calls_wait_past_the_limit_stops_it_and_silence_does_not():
    limit = watchdog.CallLimit(2.0)
    limit.beat({"call": 1, "running_s": 1.5, "free": True}, now=10.0)
    assert limit.overdue(500.0) == ""  # a free call's silence is compilation, not a spin
    limit.beat({"call": 1, "running_s": 2.1, "free": True}, now=10.6)
    assert "call 1 of forward waited 2.1 s for the GPU, past its limit of 2.0 s" in limit.overdue(10.6)
