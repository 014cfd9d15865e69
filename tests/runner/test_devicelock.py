"""The device lock's sharing (runner/host/devicelock.py): untimed work on a GPU shares it up to a limit,
never beside a timing, and a timing that waits goes before new sharers. Real threads and file locks
(the GPU's lock is a file lock whatever the host has)."""

import threading
import time

import pytest

from runner.host.devicelock import DeviceLock


def take(lock: DeviceLock, held: list, name: str) -> threading.Thread:
    def run():
        lock.acquire()
        held.append(name)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def settle():
    time.sleep(0.2)


@pytest.fixture(autouse=True)
def three_sharers(monkeypatch):
    monkeypatch.setenv("KERNELLAB_DEVICE_SHARERS", "3")


def test_untimed_holders_share_up_to_the_limit():
    locks = [DeviceLock("cuda", shared=True) for _ in range(4)]
    held = []
    for i, lock in enumerate(locks):
        take(lock, held, i)
    settle()
    assert sorted(held) == [0, 1, 2]  # the fourth waits for a place
    locks[0].release()
    settle()
    assert sorted(held) == [0, 1, 2, 3]
    for lock in locks[1:]:
        lock.release()


def test_a_timing_waits_for_every_sharer_and_goes_before_new_ones():
    first = DeviceLock("cuda", shared=True).acquire()
    timing, later = DeviceLock("cuda"), DeviceLock("cuda", shared=True)
    held = []
    take(timing, held, "timing")
    settle()
    take(later, held, "later")  # room for it among the sharers, but a timing is waiting
    settle()
    assert held == []
    first.release()
    settle()
    assert held == ["timing"]
    timing.release()
    settle()
    assert held == ["timing", "later"]
    later.release()


def test_nothing_shares_with_a_timing():
    timing, untimed = DeviceLock("cuda").acquire(), DeviceLock("cuda", shared=True)
    held = []
    take(untimed, held, "untimed")
    settle()
    assert held == []
    timing.release()
    settle()
    assert held == ["untimed"]
    untimed.release()


def test_the_cpu_and_a_limit_of_one_never_share(monkeypatch):
    assert not DeviceLock("cpu", shared=True).shared  # untimed work on shared cores slows a timed one
    monkeypatch.setenv("KERNELLAB_DEVICE_SHARERS", "1")
    assert not DeviceLock("cuda", shared=True).shared
    monkeypatch.delenv("KERNELLAB_DEVICE_SHARERS")
    assert not DeviceLock("cuda", shared=True).shared  # the default: alone, until sharing is measured to pay
    monkeypatch.setenv("KERNELLAB_DEVICE_SHARERS", "not a number")
    assert not DeviceLock("cuda", shared=True).shared
