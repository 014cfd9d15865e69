"""The eager baseline timed between a CPU candidate's blocks (runner/host/pairing.py): the parent's
bookkeeping against a stand-in for the truths' sandbox, then real evaluations, one of them while
other processes load the cores."""

import queue
import subprocess
import sys
import threading
import time

import pytest

from runner.common import timing
from runner.host.devicelock import timing_cpus
from runner.host.pairing import Pairing
from runner.host.sandbox import default_threads

from . import sources

pytestmark = pytest.mark.serial  # times work on the host's cores: never beside another xdist worker


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
    idle = lambda: (0.0, 0.0)
    pairing = lent(EagerSandbox())
    assert pairing.on_message({"kind": "pair", "calls": 0, "n": 4}, idle)[0] == {"go": True}
    # 2 calls where it asked for 4, then a different block size
    assert pairing.on_message({"kind": "pair", "calls": 2, "n": 4}, idle)[0] == {"go": False}
    assert "malformed" in pairing.dropped
    pairing = lent(EagerSandbox())
    pairing.on_message({"kind": "pair", "calls": 0, "n": 4}, idle)
    assert pairing.on_message({"kind": "pair", "calls": 4, "n": 8}, idle)[0] == {"go": False}
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


def test_without_a_cgroup_reading_of_the_candidates_cpu_nothing_is_paired():
    # Live threads' counts alone (running None) miss processes that exit between two readings.
    sandbox = EagerSandbox()
    pairing = lent(sandbox)
    assert pairing.on_message({"kind": "pair", "calls": 0, "n": 4}, lambda: (None, 0.0))[0] == {"go": False}
    assert sandbox.blocks == 0  # no eager block timed for nothing
    assert "no cgroup that accounts its CPU time" in pairing.dropped
    readings = iter([(0.0, 0.0), None])  # readable before the block, gone after it
    pairing = lent(EagerSandbox())
    assert pairing.on_message({"kind": "pair", "calls": 0, "n": 4}, lambda: next(readings))[0] == {"go": False}
    assert "no cgroup" in pairing.dropped


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


RELU_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(1024, 2048)]

def get_init_inputs():
    return []
'''

# A C ReLU that marks, in a shared page, when each call ends and whether one is running.
RELU_KERNEL = '''
import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn

FOLDER = tempfile.mkdtemp()
with open(os.path.join(FOLDER, "relu.c"), "w") as f:
    f.write(r"""
#include <stdint.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
static volatile int64_t *beat;
int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int open_beat(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) return -1;
    beat = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return beat == MAP_FAILED ? -1 : 0;
}
void relu(const float *x, float *y, int64_t n) {
    if (beat) beat[1] = 1;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    if (beat) { beat[0] = now_ns(); beat[1] = 0; }
}
""")
subprocess.run(["cc", "-O3", "-shared", "-fPIC", os.path.join(FOLDER, "relu.c"), "-o", os.path.join(FOLDER, "relu.so")],
               check=True, capture_output=True, text=True)
LIB = ctypes.CDLL(os.path.join(FOLDER, "relu.so"))
LIB.relu.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
LIB.open_beat.argtypes = [ctypes.c_char_p]
%(START)s

class ModelNew(nn.Module):
    def forward(self, x):%(CALL)s
        x = x.contiguous()
        y = torch.empty_like(x)
        LIB.relu(x.data_ptr(), y.data_ptr(), x.numel())
        return y
'''

# A link of a chain of short-lived processes: it waits (asleep) until the kernel's calls pause,
# as they do while the eager block is timed, spins 1 ms on the same core, starts the next link
# and exits, so that the live processes at any reading have run next to nothing.
SPINNER = r"""
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
extern char **environ;
static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    volatile int64_t *beat = mmap(0, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (beat == MAP_FAILED) return 1;
    close(fd);
    struct timespec nap = {0, 200000};
    for (;;) {
        int64_t last = beat[0], now = now_ns();
        if (kill(atoi(argv[2]), 0) != 0) return 0;  /* the kernel's process is gone: the chain ends */
        if (last && !beat[1] && now - last > 4000000) break;  /* a pause between the kernel's blocks */
        nanosleep(&nap, 0);
    }
    int64_t began = now_ns();
    while (now_ns() - began < 1000000 && !beat[1]) ;
    pid_t next;
    posix_spawn(&next, argv[0], 0, 0, argv, environ);
    return 0;
}
"""

# Built at import; started from the first call timed at normal priority, so that every link
# inherits it and the timing cores (the sandbox compiles at idle priority: runner/common/compile.py).
START_CHAIN = f'''
BEAT, SPIN = os.path.join(FOLDER, "beat"), os.path.join(FOLDER, "spin")
with open(SPIN + ".c", "w") as f:
    f.write({SPINNER!r})
subprocess.run(["cc", "-O2", SPIN + ".c", "-o", SPIN], check=True, capture_output=True, text=True)
if LIB.open_beat(BEAT.encode()) != 0:
    raise RuntimeError("no beat")
CHAIN = []
'''
CALL_CHAIN = """
        if not CHAIN and os.sched_getscheduler(0) == os.SCHED_OTHER:
            CHAIN.append(subprocess.Popen([SPIN, BEAT, str(os.getpid())]))"""


@pytest.mark.slow
def test_cpu_of_short_lived_processes_during_the_eager_blocks_drops_the_pairing(cpu_pool):
    """A correct ReLU whose helper processes, each living ~1 ms, spin on the timing core while the
    eager baseline is timed. Counted from live threads they went unseen (the eager blocks ran
    twice as slow as the control's and the pairing stood); the cgroup counts them, so the
    pairing is dropped, with the reason, and the speedup is the one measured apart."""
    assert cpu_pool.validate(RELU_PROBLEM, seed=6)["status"] == "ok"
    honest = cpu_pool.evaluate(RELU_PROBLEM, RELU_KERNEL % {"START": "", "CALL": ""}, seed=6)
    assert honest["status"] == "correct", honest["reason"]
    assert honest["paired"]["dropped"] is None, honest["paired"]
    spun = cpu_pool.evaluate(RELU_PROBLEM, RELU_KERNEL % {"START": START_CHAIN, "CALL": CALL_CHAIN}, seed=6)
    assert spun["status"] == "correct", spun["reason"] + spun.get("log", "")
    paired = spun["paired"]
    assert paired["dropped"] and "work outside its calls" in paired["dropped"], (paired, honest["paired"])
    assert "its cgroup counts processes that exited" in paired["dropped"]
    assert spun["speedup_vs_eager"] != paired["speedup"]  # measured apart, not paired
