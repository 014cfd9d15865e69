"""The eager baseline timed between a CPU candidate's blocks (runner/pairing.py): the parent's
bookkeeping against a stand-in for the truths' sandbox, then real evaluations, one of them while
other processes load the cores."""

import queue
import subprocess
import sys
import threading
import time

import pytest

from runner import timing
from runner.devicelock import timing_cpus
from runner.pairing import Pairing
from runner.sandbox import default_threads

from . import sources


class EagerSandbox:
    """The truths' sandbox as the parent sees it: each eager block answered with `ms` per call."""

    def __init__(self, ms=lambda block: 2.0):
        self.messages, self.ms, self.blocks = queue.Queue(), ms, 0

    def send(self, message):
        size = message["block"]
        self.messages.put({"kind": "pair", "nonce": "n", "samples": [self.ms(self.blocks)] * size})
        self.blocks += 1


def lent(sandbox):
    pairing = Pairing()
    threading.Thread(target=pairing.serve, args=(sandbox, "n", time.monotonic() + 30), daemon=True).start()
    assert pairing.ready.wait(5)
    return pairing


def candidate(pairing, blocks, size, ms, cpu=lambda: (0.0, 0.0)):
    """The candidate's side as time_cpu drives it; its samples (ms(k) in block k)."""
    samples = []
    for k in range(blocks):
        reply, _ = pairing.on_message({"kind": "pair", "calls": len(samples), "n": size}, cpu)
        assert reply == {"go": True}
        samples += [ms(k)] * size
    assert pairing.on_message({"kind": "pair", "calls": len(samples), "at": "end"}, cpu)[0] == {"go": False}
    return samples


def test_each_block_is_paired_with_the_eager_block_before_it():
    # The load doubles both sides' times in every other block: the pairs keep the ratio.
    pairing = lent(EagerSandbox(ms=lambda k: 2.0 * (1 + k % 2)))
    samples = candidate(pairing, 6, 4, lambda k: 1.0 * (1 + k % 2))
    summary = pairing.summary(samples)
    assert summary["blocks"] == 6 and summary["calls_per_block"] == 4 and summary["dropped"] is None
    assert summary["speedup"] == pytest.approx(2.0) and summary["speedup_ci95"] == [pytest.approx(2.0)] * 2
    # the same samples against one eager median taken apart: 3.0 / 1.5, or anything the load made it
    assert summary["eager_ms"] == pytest.approx(3.0)


def test_the_candidate_cannot_choose_which_calls_meet_which_eager_block():
    pairing = lent(EagerSandbox())
    assert pairing.on_message({"kind": "pair", "calls": 0, "n": 4}, lambda: None)[0] == {"go": True}
    # 2 calls where it asked for 4, then a different block size
    assert pairing.on_message({"kind": "pair", "calls": 2, "n": 4}, lambda: None)[0] == {"go": False}
    assert "malformed" in pairing.dropped
    pairing = lent(EagerSandbox())
    pairing.on_message({"kind": "pair", "calls": 0, "n": 4}, lambda: None)
    assert pairing.on_message({"kind": "pair", "calls": 4, "n": 8}, lambda: None)[0] == {"go": False}
    # a verdict with other timed calls than those it paired
    pairing = lent(EagerSandbox())
    samples = candidate(pairing, 3, 4, lambda k: 1.0)
    assert "other timed calls" in pairing.summary(samples + [0.5])["dropped"]


def test_cpu_used_by_the_candidate_while_eager_is_timed_drops_the_pairing():
    pairing = lent(EagerSandbox())
    spent = iter(range(100))
    busy = lambda: (float(next(spent)), 0.0)  # a whole CPU second per reading
    summary = pairing.summary(candidate(pairing, 3, 4, lambda k: 1.0, cpu=busy))
    assert summary["idle_cpu_ms"] > 0
    assert "of CPU while the eager baseline was timed" in summary["dropped"]


def test_without_the_truths_sandbox_nothing_is_paired():
    pairing = Pairing()
    pairing.gone()
    assert pairing.ready.is_set() and "not there" in pairing.dropped
    assert pairing.on_message({"kind": "pair", "calls": 0, "n": 4}, lambda: None)[0] == {"go": False}
    assert pairing.summary([1.0] * 4) is None


def test_time_cpu_runs_equal_blocks_and_the_whole_budget():
    asked = []

    def pair(calls, size):
        asked.append((calls, size))
        return True

    # a call of ~1 µs: PAIRED_MAX_REPS calls unless one call took over 1 ms (a budget no honest host misses)
    measured = timing.time_cpu(lambda: None, [()], budget_s=2.0, pair=pair)
    n = len(measured["samples_ms"])
    size = asked[0][1]
    assert len(asked) == timing.PAIRED_BLOCKS + 1 and n == size * timing.PAIRED_BLOCKS
    assert asked[-1] == (n, None) and [c for c, _ in asked[:-1]] == list(range(0, n, size))


# --- real sandboxes ------------------------------------------------------------------------

@pytest.mark.slow
def test_a_cpu_evaluation_pairs_its_eager_baseline(cpu_pool):
    result = cpu_pool.evaluate(sources.SOFTMAX_PROBLEM, sources.SOFTMAX_KERNEL, seed=3)
    assert result["status"] == "correct", result["reason"]
    paired = result["paired"]
    assert paired["dropped"] is None and paired["blocks"] >= timing.PAIRED_BLOCKS
    assert paired["eager_ms"] > 0 and paired["idle_cpu_ms"] < 100
    lo, hi = paired["speedup_ci95"]
    assert lo <= paired["speedup"] <= hi
    assert result["speedup_vs_eager"] == paired["speedup"]
    assert result["phases"]["paired_eager_s"] > 0


@pytest.mark.slow
def test_load_that_comes_after_validation_leaves_the_paired_ratio(cpu_pool):
    """PyTorch's own softmax as the kernel: paired, it is as fast as eager, though the cores and the
    shared cache are loaded only after the problem's baseline was measured."""
    problem = sources.SOFTMAX_PROBLEM.replace("64, 1024", "64, 1023")  # a baseline of its own
    assert cpu_pool.validate(problem, seed=4)["status"] == "ok"
    hogs = [subprocess.Popen([sys.executable, "-c", "a = bytearray(64 << 20)\nwhile True: b = bytes(a)"])
            for _ in range(3)]
    try:
        time.sleep(0.5)
        result = cpu_pool.evaluate(problem, sources.SOFTMAX_BY_TORCH, seed=4, allow_library=True)
    finally:
        for hog in hogs:
            hog.kill()
    assert result["status"] == "correct", result["reason"]
    paired = result["paired"]
    assert paired["dropped"] is None, paired
    unpaired = result["baseline"]["eager_ms"] / result["timing"]["median_ms"]
    assert 0.75 < paired["speedup"] < 1.33, (paired, unpaired)


@pytest.mark.slow
def test_timed_cpu_processes_run_on_the_timing_cores(cpu_pool):
    """Both sides of a pairing on the same cores (devicelock.timing_cpus): the kernel checks the
    cores it runs on from its first call, which comes after the device is granted."""
    cores = sorted(timing_cpus(default_threads("cpu")))
    kernel = sources.SILU_KERNEL.replace(
        "        x = x.contiguous()",
        f"        import os\n        assert sorted(os.sched_getaffinity(0)) == {cores!r}, os.sched_getaffinity(0)\n"
        "        x = x.contiguous()")
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, kernel, seed=5)
    assert result["status"] == "correct", result["reason"]
    assert result["paired"]["dropped"] is None
