"""Baselines are timed like candidates: holding the device lock, and an out-of-memory
validation is the device's failure, never the problem's. Real CPU sandboxes."""

import os
import subprocess
import sys
import threading
import time

import pytest

import runner
from runner.common import procs
from runner.host import baselines, evaluation
from runner.host.devicelock import timing_cpus
from runner import DeviceBusy

pytestmark = pytest.mark.serial  # times work on the host's cores: never beside another xdist worker

# Each forward sleeps, so one validation's timing lasts most of a second: long enough that
# two validations started together would overlap without the lock.
SLEEPY_PROBLEM = '''
import time
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        time.sleep(0.02)
        return x * 2

def get_inputs():
    return [torch.randn(16, 16)]

def get_init_inputs():
    return []
'''

OUT_OF_MEMORY_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (held by another process)")

def get_inputs():
    return [torch.randn(16, 16)]

def get_init_inputs():
    return []
'''


@pytest.mark.slow
def test_two_concurrent_validations_never_time_at_once():
    results, start = [None, None], threading.Barrier(2)

    def validate(i):
        start.wait()
        # distinct sources: neither finds the other's baseline in the cache
        results[i] = pool.validate(SLEEPY_PROBLEM + f"\n# copy {i}\n", seed=i)

    with runner.Pool(device="cpu", size=2) as pool:
        pool.current_environment()
        threads = [threading.Thread(target=validate, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [r["status"] for r in results] == ["ok", "ok"], [r["reason"] for r in results]
    (a0, a1), (b0, b1) = sorted(r["phases"]["timing_window"] for r in results)
    assert a1 - a0 > 0.15 and b1 - b0 > 0.15  # each timed for a while (at least 10 calls of 20 ms)
    assert a1 <= b0, f"the timings overlapped: {a0:.3f}-{a1:.3f} and {b0:.3f}-{b1:.3f}"


@pytest.mark.slow
def test_validation_out_of_memory_is_the_devices_failure_not_the_problems(cpu_pool, monkeypatch):
    monkeypatch.setattr(evaluation, "OOM_PAUSE_S", 0.0)
    taken = []
    real_take = cpu_pool.take
    monkeypatch.setattr(cpu_pool, "take", lambda: taken.append(1) or real_take())
    with pytest.raises(DeviceBusy, match="out of memory validating the problem 3 times"):
        cpu_pool.validate(OUT_OF_MEMORY_PROBLEM, seed=0)
    assert len(taken) == evaluation.OOM_ATTEMPTS  # a fresh sandbox each time
    environment = cpu_pool.current_environment()
    assert baselines.load(baselines.key(OUT_OF_MEMORY_PROBLEM, "cpu", environment, False)) is None


def test_a_problem_past_its_own_limits_stays_invalid(cpu_pool):
    # A plain error is the problem's: invalid at once, no retry.
    broken = OUT_OF_MEMORY_PROBLEM.replace('raise torch.OutOfMemoryError("CUDA out of memory.', 'raise ValueError("bad shape.')
    result = cpu_pool.validate(broken, seed=0)
    assert result["status"] == "invalid"
    assert "ValueError" in result["reason"]


def test_timing_cores_are_the_last_allowed_ones():
    allowed = sorted(os.sched_getaffinity(0))
    assert timing_cpus(1) == allowed[-1:]
    assert timing_cpus(10_000) == allowed
    assert timing_cpus(0) == allowed[-1:]


def test_pin_moves_every_thread_of_a_process():
    child = subprocess.Popen([sys.executable, "-c", "import threading, time\n"
                              "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
                              "time.sleep(30)"])
    try:
        tids = []
        for _ in range(100):  # until its second thread has started
            tids = [tid for _, tid in procs.threads([child.pid])]
            if len(tids) >= 2:
                break
            time.sleep(0.05)
        assert len(tids) >= 2
        target = timing_cpus(1)
        procs.pin([child.pid], target)
        assert all(os.sched_getaffinity(tid) == set(target) for tid in tids)
        procs.pin([child.pid + 10_000_000], target)  # gone: skipped
    finally:
        child.kill()
        child.wait()
