"""Whose fault an out-of-memory failure is (runner/host/gpumem.py): the parse of PyTorch's message, and what
an evaluation does with it (runner/host/evaluation.py)."""

import time

import pytest

import runner
from runner.host import evaluation, gpumem
from runner import DeviceBusy

from . import sources

# From a KernelBench level-1 run on the H200: an honest starting kernel for
# 23_Softmax failed while four searches of 6-12 GB problems ran on the device.
FULL = ("CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 3.04 GiB "
        "is free. Including non-PyTorch memory, this process has 12.51 GiB memory in use.")
H200_MESSAGE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity "
                "of 139.80 GiB of which 3.04 GiB is free. Including non-PyTorch memory, this process has 12.51 GiB "
                "memory in use. Of the allocated memory 12.00 GiB is allocated by PyTorch, and 0 bytes is reserved "
                "by PyTorch but unallocated.")


def test_a_full_device_with_the_candidate_inside_its_share_is_the_devices_fault():
    why = gpumem.others_fault(H200_MESSAGE, cap=115016)
    assert why is not None
    assert "held 12810 MB" in why and "6144 MB more" in why and "3113 MB of 143155 MB free" in why


def test_asking_past_its_share_is_the_candidates_own_oom():
    assert gpumem.others_fault(H200_MESSAGE, cap=16000) is None  # 12.5 GiB held + 6 GiB asked > 16000 MB
    greedy = H200_MESSAGE.replace("Tried to allocate 6.00 GiB", "Tried to allocate 200.00 GiB")
    assert gpumem.others_fault(greedy, cap=115016) is None


def test_room_on_the_device_or_another_wording_stays_the_candidates():
    roomy = H200_MESSAGE.replace("of which 3.04 GiB is free", "of which 40.00 GiB is free")
    assert gpumem.others_fault(roomy, cap=115016) is None  # fragmentation of its own memory, say
    assert gpumem.others_fault("CUDA error: out of memory", cap=115016) is None
    assert gpumem.others_fault("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 6,442,450,944 bytes",
                               cap=115016) is None


@pytest.mark.slow
def test_the_evaluation_runs_again_then_hands_the_device_back(runner_settings, monkeypatch):
    """The retry path of runner/host/evaluation.py on real CPU sandboxes: they are given a GPU memory cap
    as CUDA ones have (without NVML nothing is polled), and the candidate raises PyTorch's message
    for a full device. Three runs, then DeviceBusy; past its share it is the kernel's own `oom`.
    The same on a GPU: tests/runner/test_gpu.py."""
    from runner.host import sandbox as sandboxes

    made = sandboxes.Sandbox.__init__

    def with_a_cap(self, *args, **kwargs):
        made(self, *args, **kwargs)
        self.gpu_cap_mb = 115016

    monkeypatch.setattr(sandboxes.Sandbox, "__init__", with_a_cap)
    monkeypatch.setattr(evaluation, "OOM_PAUSE_S", 0.1)
    runs = []
    judge = evaluation._judge
    # the runs after the first never share the device (runner/host/devicelock.py): alone, the memory is theirs
    monkeypatch.setattr(evaluation, "_judge", lambda *a, **k: runs.append(bool(a[1].get("alone"))) or judge(*a, **k))
    full = sources.SILU_KERNEL.replace("        x = x.contiguous()\n", f"        raise RuntimeError({FULL!r})\n", 1)
    with runner.Pool(device="cpu", size=2) as pool:
        with pytest.raises(DeviceBusy, match="3 times within its own share"):
            pool.evaluate(sources.SILU_PROBLEM, full, seed=1)
        assert runs == [False, True, True]
        greedy = full.replace("Tried to allocate 6.00 GiB", "Tried to allocate 200.00 GiB")
        assert pool.evaluate(sources.SILU_PROBLEM, greedy, seed=2)["status"] == "oom"
        assert len(runs) == 4
        assert pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=3)["status"] == "correct"


def test_one_reading_serves_every_watched_sandbox():
    """The memory cap's poller reads the usage once per round for all watches (NVML itself runs
    on the GPU tests: test_gpu.py's cap test), calls back once past the cap, and ends with the
    last watch."""
    readings, exceeded = [], []

    def read():
        readings.append(time.monotonic())
        return {61000: 100 * len(readings), 61001: 10}

    poller = gpumem.Poller(read, every_s=0.02)
    gpumem.Watch(61000, 250, exceeded.append, poller=poller)  # stops itself once exceeded
    steady = gpumem.Watch(61001, 250, exceeded.append, poller=poller)
    idle = [gpumem.Watch(61002 + i, 250, exceeded.append, poller=poller) for i in range(30)]
    deadline = time.monotonic() + 5
    while not exceeded and time.monotonic() < deadline:
        time.sleep(0.01)
    assert exceeded == [300]  # the third reading, once
    rounds = len(readings)
    for watch in [steady, *idle]:
        watch.stop()
    time.sleep(0.1)
    assert len(readings) <= rounds + 1 and exceeded == [300]  # no reading once nothing is watched
    again = gpumem.Watch(61000, 10_000, exceeded.append, poller=poller)  # a new watch starts it again
    time.sleep(0.1)
    again.stop()
    assert len(readings) > rounds + 1 and exceeded == [300]
