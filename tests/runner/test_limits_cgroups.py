"""The sandbox's cgroups (runner/host/limits.py): their CPU accounting keeps what exited processes
ran, and the empty cgroups a killed evaluator leaves are swept at the next pool's start,
never a live evaluator's nor one that still holds a process."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import runner
from runner.host.batchclock import readings
from runner.host.limits import Cgroups, Limits, remove_stale_cgroups
from tests.conftest import service_missing

ROOT = Path(__file__).resolve().parents[2]

# An evaluator as far as its cgroups go: it makes a sandbox's cgroups and, with "task", puts a
# process of its own session in them (one that outlives it); then it waits to be killed.
EVALUATOR = """
import json, subprocess, sys, time
from runner.host.limits import Cgroups, Limits, remove_stale_cgroups
groups = Cgroups(Limits.from_env("cpu"))
task = None
if sys.argv[1] == "task":
    task = subprocess.Popen(["sleep", "120"], start_new_session=True)
    for folder in groups.folders():
        (folder / "cgroup.procs").write_text(str(task.pid))
print(json.dumps({"folders": [str(f) for f in groups.folders()], "task": task and task.pid}), flush=True)
time.sleep(120)
"""


def made_cgroups() -> Cgroups:
    groups = Cgroups(Limits.from_env("cpu"))
    if groups.cpu is None:
        groups.remove()
        service_missing("a cgroup with CPU accounting", "run the tests as root on a host with cgroup v1 "
                                                        "(cpuacct) or v2")
    return groups


def killed_evaluator(mode: str) -> tuple[list[Path], int | None]:
    """The cgroups an evaluator killed with SIGKILL left behind, and the task it left in them."""
    evaluator = subprocess.Popen([sys.executable, "-c", EVALUATOR, mode], cwd=ROOT, stdout=subprocess.PIPE,
                                 text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    left = json.loads(evaluator.stdout.readline())
    evaluator.send_signal(signal.SIGKILL)
    evaluator.wait()
    evaluator.stdout.close()
    return [Path(f) for f in left["folders"]], left["task"]


@pytest.mark.slow
def test_the_cgroup_counts_the_cpu_of_a_process_that_has_exited():
    groups = made_cgroups()
    try:
        before = groups.cpu_seconds()
        # a child in the cgroup starts a grandchild that spins 0.3 s of CPU and exits; then it exits
        spin = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
        code = (f"import os, subprocess, sys\nfor folder in {[str(f) for f in groups.folders()]!r}:\n"
                f"    open(folder + '/cgroup.procs', 'w').write(str(os.getpid()))\n"
                f"subprocess.run([sys.executable, '-c', {spin!r}], check=True)")
        child = subprocess.run([sys.executable, "-c", code], timeout=60)
        assert child.returncode == 0
        assert groups.processes() == []  # nothing of it is alive to read
        assert before is not None and groups.cpu_seconds() - before >= 0.3
        # the batch clock's and the pairing's reading: running from the cgroup, though no thread is left
        assert readings(os.getpid(), [os.getpid()], groups.cpu_seconds())[0] >= 0.3
    finally:
        groups.remove()
    assert not any(f.exists() for f in groups.folders())


def test_without_a_cgroup_the_clock_reads_no_running_time():
    # live threads alone would miss what exited between readings: no running time rather than a partial one
    reading = readings(os.getpid(), [os.getpid()])
    assert reading[0] is None and reading[1] >= 0
    assert readings(os.getpid(), [os.getpid()], 1.5)[0] == 1.5


@pytest.mark.slow
def test_a_pool_start_sweeps_the_empty_cgroups_of_killed_evaluators():
    made_cgroups().remove()  # skips where there are none to make
    leaked, _ = killed_evaluator("empty")
    held, task = killed_evaluator("task")
    live = made_cgroups()  # this process's: a live evaluator's, empty
    try:
        assert leaked and all(f.is_dir() for f in leaked + held)  # v1: memory, pids and cpuacct; v2: one
        assert all(f.name.startswith("kernellab-") for f in leaked)
        runner.Pool(device="cpu", size=0).close()
        assert not any(f.exists() for f in leaked)
        assert all(f.is_dir() for f in held), "a cgroup that still holds a process was removed"
        assert all(f.is_dir() for f in live.folders()), "a live evaluator's cgroup was removed"
        os.kill(task, signal.SIGKILL)
        for _ in range(100):  # its cgroup empties once it is gone
            if not (held[0] / "cgroup.procs").read_text().split():
                break
            time.sleep(0.05)
        assert set(remove_stale_cgroups()) == {str(f) for f in held}
    finally:
        live.remove()
        try:
            os.kill(task, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for folder in leaked + held:
            if folder.exists():
                folder.rmdir()
