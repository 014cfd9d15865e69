"""Sandbox slots (runner/host/isolation.py): a uid is handed to the next sandbox only once nothing
runs as it any more, so memory a dying process still holds is never charged to its successor."""

import os
import subprocess
import time

import pytest

from runner.common import procs
from runner.host import isolation

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a slot's uid is dropped to from root: needs root")


@pytest.fixture
def slot_base(monkeypatch):
    # apart from the uids the test pools take, and one range per xdist worker: these tests count every
    # process of a uid, so a neighbour's leftover under the same uid would be theirs
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    base = 63500 + 20 * worker
    monkeypatch.setenv("KERNELLAB_SANDBOX_UID_BASE", str(base))
    return base


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/status") as status:
        return next(line.split()[1] for line in status if line.startswith("State:"))


def _eventually(predicate, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _takes(uid: int) -> bool:
    slot = isolation.Slot()
    try:
        return slot.uid == uid
    finally:
        slot.release()


def test_a_slot_stays_taken_until_its_last_process_is_gone(slot_base):
    slot = isolation.Slot()
    uid = slot.uid
    assert uid == slot_base
    # outlives its sandbox (a new session, as a CUDA process tearing down does); not reaped here,
    # so once killed it lingers as a zombie that still runs as the uid
    leftover = subprocess.Popen(["sleep", "60"], user=uid, group=uid, start_new_session=True)
    try:
        assert procs.of_uid(uid) == [leftover.pid]
        slot.release()
        assert _eventually(lambda: _state(leftover.pid) == "Z"), "the release kills what still runs as the uid"
        assert not _takes(uid), "a uid with a process left is not handed out"
    finally:
        leftover.kill()
        leftover.wait()
    assert _eventually(lambda: _takes(uid)), "the uid is free again once its last process is gone"


def test_a_uid_left_with_processes_by_a_dead_worker_is_skipped_then_freed(slot_base):
    leftover = subprocess.Popen(["sleep", "60"], user=slot_base, group=slot_base, start_new_session=True)
    try:
        slot = isolation.Slot()
        assert slot.uid != slot_base
        slot.release()
        assert _eventually(lambda: _state(leftover.pid) == "Z")
    finally:
        leftover.kill()
        leftover.wait()
    assert _eventually(lambda: _takes(slot_base))
