"""Disturbance-aware timing: the parent's reading of the GPU around each measurement, with
readings given through gpustate.Source (what NVML would say), and the real judge on the CPU."""

import os
import subprocess
import sys

import pytest

from runner.host import gpustate

from . import sources

QUIET = {"sm_mhz": 1980, "mem_mhz": 3201, "throttle": 0x1}


class Readings(gpustate.Source):
    """A scripted device: one (before, after, processes) per measurement."""

    def __init__(self, windows):
        self.windows, self.reads = list(windows), 0

    def read(self):
        window = self.windows[min(self.reads // 2, len(self.windows) - 1)]
        reading = dict(window[self.reads % 2], at_us=1_000_000 + self.reads)
        self.reads += 1
        return reading

    def processes(self, since_us):
        return self.windows[min((self.reads - 1) // 2, len(self.windows) - 1)][2]


def run(measurements, tries_wanted, what="candidate", gap=""):
    """Drives the messages the judge sends; returns how many tries the parent asked for."""
    tries = 0
    while True:
        tries += 1
        measurements.on_timing({"what": what, "at": "begin"})
        if not measurements.on_timing({"what": what, "at": "end", "gap": gap})["again"]:
            return tries
        assert tries < tries_wanted + 5


def test_a_quiet_device_is_measured_once():
    m = gpustate.Measurements(Readings([(QUIET, QUIET, [])]))
    assert run(m, 1) == 1
    assert m.noisy("candidate") is None
    assert m.of("candidate") == [{"what": "candidate", "attempt": 1, "sm_mhz": [1980, 1980], "mem_mhz": [3201, 3201],
                                  "throttle": ["idle"], "disturbance": None}]


def test_another_process_on_the_sms_is_measured_again_then_marked_noisy():
    busy = (QUIET, QUIET, [(4242, 87)])
    m = gpustate.Measurements(Readings([busy]), is_ours=lambda pid: False)
    assert run(m, 3) == gpustate.ATTEMPTS
    assert "other processes used the GPU's SMs" in m.noisy("candidate") and "4242" in m.noisy("candidate")
    assert "after 3 tries" in m.noisy("candidate")


def test_our_own_sandboxes_and_idle_processes_are_no_disturbance():
    m = gpustate.Measurements(Readings([(QUIET, QUIET, [(os.getpid(), 90), (4242, 0)])]))
    assert run(m, 1) == 1 and m.noisy("candidate") is None


def test_a_disturbance_that_passes_is_measured_again_and_not_noisy():
    held_back = dict(QUIET, throttle=0x4 | 0x1)
    m = gpustate.Measurements(Readings([(QUIET, held_back, []), (QUIET, QUIET, [])]))
    assert run(m, 2) == 2
    first, second = m.of("candidate")
    assert "software power cap" in first["disturbance"] and second["disturbance"] is None
    assert m.noisy("candidate") is None


def test_clocks_still_ramping_make_the_first_measurement_a_warm_up():
    ramping = (dict(QUIET, sm_mhz=375), QUIET, [])
    m = gpustate.Measurements(Readings([ramping, (QUIET, QUIET, [])]))
    assert run(m, 2) == 2
    assert "SM clock moved from 375 to 1980 MHz" in m.of("candidate")[0]["disturbance"]


def test_a_wall_clock_gap_is_measured_again_and_noisy_never_a_verdict():
    m = gpustate.Measurements(None)  # no NVML: the judge's gap still counts
    assert run(m, 3, gap="the wall clock measured 2.5 ms per call but the timed stream only 0.2 ms") == 3
    assert "wall clock measured 2.5 ms" in m.noisy("candidate")


def test_each_measurement_has_its_own_tries():
    m = gpustate.Measurements(Readings([(QUIET, QUIET, [(4242, 50)]), (QUIET, QUIET, [])]), is_ours=lambda p: False)
    assert run(m, 2, what="eager") == 2
    assert run(m, 1, what="compile") == 1
    assert [r["attempt"] for r in m.of("eager")] == [1, 2] and m.noisy("eager", "compile") is None


def test_descendants_of_this_process_are_ours_and_a_sibling_sandbox_is_not_the_measured_ones():
    child, sibling = (subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"]) for _ in range(2))
    try:
        assert gpustate.ours(child.pid) and gpustate.ours(os.getpid())
        assert not gpustate.ours(1) and not gpustate.ours(os.getppid())
        assert gpustate.ours(child.pid, root=child.pid) and not gpustate.ours(sibling.pid, root=child.pid)
    finally:
        for process in (child, sibling):
            process.kill()
            process.wait()


def test_no_nvml_on_a_cpu_host():
    assert gpustate.source_for("cpu", {"device_uuid": "GPU-x"}) is None
    assert gpustate.source_for("cuda", {}) is None  # no UUID reported: nothing to match


@pytest.mark.slow
def test_the_judge_remeasures_a_disturbed_candidate_and_the_verdict_stays_correct(cpu_pool, monkeypatch):
    busy = Readings([(QUIET, QUIET, [(4242, 80)])])
    monkeypatch.setattr(gpustate, "source_for", lambda device, environment: busy)
    result = cpu_pool.evaluate(sources.SILU_PROBLEM + "\n# disturbed\n", sources.SILU_KERNEL, seed=11)
    assert result["status"] == "correct", result["reason"]
    assert [r["attempt"] for r in result["measurements"] if r["what"] == "candidate"] == [1, 2, 3]
    assert result["noisy"].startswith("candidate: other processes used the GPU's SMs")
    assert "eager: other processes" in result["noisy"]  # its baseline was measured on the same busy device
    # kept, but out of every ranking until it is run again on a quiet device
    assert result["quarantined"] and result["quarantine_reason"].startswith("timed on a disturbed device")
