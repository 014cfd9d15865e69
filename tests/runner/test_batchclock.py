"""The parent's batch clock (runner/host/batchclock.py), driven with the times a sandbox would give it:
honest medians pass, forged low ones are re-measured and then rejected on a quiet device, noisy
on a disturbed one; a sandbox that skips the batches or changes its median is rejected."""

import os
import subprocess
import sys
import threading
import time

import pytest

from runner.host.batchclock import DISTURBED_ROUNDS, LAUNCH_EXPOSED_MS, BatchClock, readings, tolerance_ms
from runner.common.procs import descendants, sched_seconds, task_waits

pytestmark = pytest.mark.serial  # times work on the host's cores: never beside another xdist worker


def drive(clock: BatchClock, median_ms: float, per_call_ms: float, overhead_ms: float = 0.3,
          launch_ms: float = 0.02, cpu_per_call_ms: float | None = None, busy=None,
          host_per_call_ms: float = 0.0) -> BatchClock:
    """Run the clock's commands against a sandbox whose calls take `per_call_ms` each (of the wall
    clock) and, where given, `cpu_per_call_ms` of CPU time. `busy(k)`: the milliseconds a busy host
    made the k-th batch wait for a CPU (added to its wall clock); the waits are read when given.
    `host_per_call_ms`: what launching one call takes the host; launches that outlast the device-side
    wait leave the device idle between calls."""
    now, cpu = 0.0, (0.0 if cpu_per_call_ms is not None else None)
    wait = 0.0 if busy is not None else None
    reply = clock.on_message({"at": "ready", "median_ms": median_ms, "launch_ms": launch_ms}, now, cpu, wait)
    k = 0
    while reply and reply["batch"]:
        waited = busy(k) if busy is not None else 0.0
        device_ms = clock.cover_ms + reply["batch"] * per_call_ms
        now += (overhead_ms + max(device_ms, reply["batch"] * host_per_call_ms) + waited) / 1000
        if cpu is not None:
            cpu += (0.1 + reply["batch"] * cpu_per_call_ms) / 1000
        if wait is not None:
            wait += (0.01 + waited) / 1000
        reply = clock.on_message({"at": "done", "n": reply["batch"]}, now, cpu, wait)
        k += 1
    return clock


def test_an_honest_median_passes_in_one_round():
    clock = drive(BatchClock("cuda"), median_ms=0.5, per_call_ms=0.48)
    assert clock.verdict(0.5, None) is None
    assert len(clock.walls[clock.sizes[0]]) == 1
    assert abs(clock.slope_ms() - 0.48) < 1e-6  # the fixed costs cancel, the device-side wait included


def test_a_forged_median_is_measured_again_then_rejected_on_a_quiet_device():
    clock = drive(BatchClock("cuda"), median_ms=0.05, per_call_ms=1.0)
    assert len(clock.walls[clock.sizes[0]]) == 3
    status, why = clock.verdict(0.05, None)
    assert status == "rejected" and "below what the parent's clock allows" in why


def test_a_forged_median_on_a_disturbed_device_is_noisy():
    clock = drive(BatchClock("cuda"), median_ms=0.05, per_call_ms=1.0)
    assert clock.verdict(0.05, "other processes used the GPU's SMs")[0] == "noisy"


def test_a_forward_that_waits_for_the_device_each_call_is_timed_at_the_slope():
    """Each batch call pays a launch (40 µs on a busy host) that the timed loop's cover hides: a median that
    far under the slope is timed at the slope; one further under it is still measured again and rejected."""
    clock = drive(BatchClock("cuda"), median_ms=0.03, per_call_ms=0.07)
    status, why = clock.verdict(0.03, None)
    assert status == "clocked" and "0.0700 ms per call" in why and "waits for the device" in why
    assert len(clock.walls[clock.sizes[0]]) == 3  # measured again first, as any low median is
    beyond = drive(BatchClock("cuda"), median_ms=0.03, per_call_ms=0.03 + 0.02 + LAUNCH_EXPOSED_MS + 0.01)
    assert beyond.verdict(0.03, None)[0] == "rejected"
    assert drive(BatchClock("cpu"), median_ms=0.03, per_call_ms=0.07).verdict(0.03, None) is None  # the CPU's own rule


def test_the_tolerance_is_ten_percent_or_twenty_microseconds():
    assert tolerance_ms(1.0) == 0.1 and tolerance_ms(0.05) == 0.02
    within = drive(BatchClock("cuda"), median_ms=0.91, per_call_ms=1.0)
    assert within.verdict(0.91, None) is None
    small = drive(BatchClock("cuda"), median_ms=0.001, per_call_ms=0.015)  # below 20 µs: left alone
    assert small.verdict(0.001, None) is None


def test_on_the_cpu_only_a_gross_difference_is_rejected():
    assert drive(BatchClock("cpu"), median_ms=0.5, per_call_ms=1.0).verdict(0.5, None) is None
    clock = drive(BatchClock("cpu"), median_ms=0.05, per_call_ms=1.0)
    assert len(clock.walls[clock.sizes[0]]) == 5
    assert clock.verdict(0.05, None)[0] == "rejected"


def test_on_the_cpu_the_sandboxs_cpu_time_decides_not_a_busy_hosts_wall_clock():
    # Calls that waited for a core (wall 3.5x the median) but ran their median's worth of CPU: honest.
    busy = drive(BatchClock("cpu"), median_ms=1.0, per_call_ms=3.5, cpu_per_call_ms=1.1)
    assert busy.verdict(1.0, None) is None
    assert abs(busy.slope_ms() - 1.1) < 1e-6
    # Forged: the calls ran twenty times the CPU time the sandbox reports.
    forged = drive(BatchClock("cpu"), median_ms=0.05, per_call_ms=1.0, cpu_per_call_ms=1.0)
    assert len(forged.walls[forged.sizes[0]]) == 5
    status, why = forged.verdict(0.05, None)
    assert status == "rejected" and "of CPU time" in why
    # CPU time spread over the threads the sandbox may use.
    threaded = drive(BatchClock("cpu", threads=4), median_ms=0.3, per_call_ms=0.3, cpu_per_call_ms=1.2)
    assert threaded.verdict(0.3, None) is None and abs(threaded.slope_ms() - 0.3) < 1e-6


def test_readings_count_a_process_and_its_children_running_and_waiting():
    """Live threads' counts, from a process down; the running time the clock uses comes only from a
    cgroup (tests/runner/test_limits_cgroups.py): without one it is None, and the wall clock serves."""
    spin = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\ntime.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, "
                               f"'-c', {spin!r}])"], start_new_session=True)
    try:
        time.sleep(2.5)  # both interpreters started, the child has spun 0.4 s and sleeps
        first = sched_seconds(descendants(parent.pid))
        time.sleep(0.5)
        second = sched_seconds(descendants(parent.pid))
        assert first is not None and first[0] >= 0.4 and first[1] >= 0
        assert second[0] - first[0] < 0.05  # sleeping is not running
        assert second[1] - first[1] < 0.05  # nor waiting for a CPU
        assert sched_seconds([parent.pid])[0] < first[0]  # the listed processes only
        without_cgroup, with_cgroup = readings(parent.pid), readings(parent.pid, None, 2.5)
        assert without_cgroup[0] is None and without_cgroup[1] >= first[1]
        assert with_cgroup[0] == 2.5 and with_cgroup[1] >= first[1]
    finally:
        os.killpg(parent.pid, 9)  # the child too
        parent.wait()
    assert readings(parent.pid) is None  # gone: nothing to read
    assert readings(parent.pid, None, 2.5) == (2.5, None)


def test_readings_count_the_waits_of_the_parents_threads_that_carry_the_messages():
    """A batch's "done" that a parent thread read late, waiting for a CPU, is a busy host's wall, not the
    kernel's: that thread's run-queue time is in the waiting reading. Here the thread shares one core
    with two spinning processes, so it waits about two thirds of the time it runs."""
    core = sorted(os.sched_getaffinity(0))[-1]
    spin = (f"import os, time\nos.sched_setaffinity(0, {{{core}}})\nprint('go', flush=True)\n"
            "end = time.time() + 20\nwhile time.time() < end: pass")
    hogs = [subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    sandbox = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    tid, spun, done = [], threading.Event(), threading.Event()

    def carrier():
        os.sched_setaffinity(0, {core})  # this thread only
        tid.append(threading.get_native_id())
        end = time.time() + 1.5
        while time.time() < end:
            pass
        spun.set()
        done.wait(10)  # alive while it is read

    try:
        assert all(hog.stdout.readline().strip() == "go" for hog in hogs)
        thread = threading.Thread(target=carrier)
        thread.start()
        assert spun.wait(15)
        carriers = [(os.getpid(), tid[0])]
        waited = task_waits(carriers)
        assert waited > 0.3, waited
        alone, carried = readings(sandbox.pid), readings(sandbox.pid, None, None, carriers)
        assert carried[1] - alone[1] >= waited - 0.01
        assert task_waits([(os.getpid(), 2**22 + 1)]) == 0  # a thread that is gone counts nothing
        done.set()
        thread.join()
    finally:
        done.set()
        for process in hogs + [sandbox]:
            process.kill()
            process.wait()


def test_on_a_busy_host_the_undisturbed_batches_decide():
    # Every large batch of the first two rounds waited 10 ms for a CPU (+0.45 ms a call): measured
    # again, and the undisturbed third round shows the honest slope.
    clock = drive(BatchClock("cuda"), median_ms=0.5, per_call_ms=0.5, busy=lambda k: 10.0 if k in (1, 3) else 0.0)
    assert len(clock.walls[clock.sizes[0]]) == 3
    assert abs(clock.slope_ms() - 0.5) < 1e-6 and clock.verdict(0.5, None) is None


def test_an_honest_median_on_a_host_busy_throughout_is_noisy_not_rejected():
    clock = drive(BatchClock("cuda"), median_ms=0.5, per_call_ms=0.5, busy=lambda k: 10.0 if k % 2 else 0.0)
    assert len(clock.walls[clock.sizes[0]]) == DISTURBED_ROUNDS
    status, why = clock.verdict(0.5, None)
    assert status == "noisy" and "busy host" in why and "waited up to 10.0 ms" in why


def test_a_forged_median_is_rejected_whatever_the_small_waits():
    # Waits within what a quiet host gives (0.1 ms a batch) do not make a forger noisy.
    clock = drive(BatchClock("cuda"), median_ms=0.05, per_call_ms=1.0, busy=lambda k: 0.1)
    assert len(clock.walls[clock.sizes[0]]) == 3
    assert clock.verdict(0.05, None)[0] == "rejected"


def test_skipped_batches_or_another_median_are_rejected():
    assert BatchClock("cpu").verdict(0.5, None)[0] == "rejected"
    clock = drive(BatchClock("cuda"), median_ms=0.5, per_call_ms=0.5)
    assert "another median" in clock.verdict(0.25, None)[1]
    broken = BatchClock("cuda")
    assert broken.on_message({"at": "ready", "median_ms": "fast", "launch_ms": 0.0}, 0.0) == {"batch": 0}
    assert broken.verdict(0.5, None)[0] == "rejected"


def test_the_cover_holds_every_launch_of_the_large_batch():
    clock = drive(BatchClock("cuda"), median_ms=0.004, per_call_ms=0.004, launch_ms=0.04)
    large = clock.sizes[1]
    assert clock.cover_ms >= large * 0.04
    assert drive(BatchClock("cpu"), median_ms=0.5, per_call_ms=0.5).cover_ms == 0.0


def test_a_launch_bound_kernel_on_a_busy_host_stays_covered():
    # seen on an H200 with six test processes beside it: a 256x256 matmul of 18 µs whose batches gave a
    # slope of 45 µs a call behind a cover sized for 2x its measured launch: the host took about 80 µs a call
    clock = drive(BatchClock("cuda"), median_ms=0.0178, per_call_ms=0.0178, launch_ms=0.015, host_per_call_ms=0.08)
    assert clock.verdict(0.0178, None) is None
