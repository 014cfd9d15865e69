"""`manage.py evaluators`: GPUs found without a CUDA context (CUDA_VISIBLE_DEVICES, NVML, nvidia-smi),
one evaluator per GPU pinned with CUDA_VISIBLE_DEVICES, a dead one restarted, all stopped on SIGTERM.
On a host without a GPU the children are CPU evaluators over a made-up device list: the supervision,
the pinning and the workers' own start (device facts included) are the real ones."""

import os
import signal
import socket
import stat
import time
from pathlib import Path

import pytest

from evaluation.supervisor import NoGpus, parse_devices, visible_gpus
from tests.conftest import cuda_available
from tests.searches.engine_env import env_for, manage, query, start, stop, wait_for


def test_a_device_list_is_split_trimmed_and_never_names_one_gpu_twice():
    assert parse_devices("0, 1,3,") == ["0", "1", "3"]
    assert parse_devices("GPU-6e8bcb4a,MIG-1") == ["GPU-6e8bcb4a", "MIG-1"]
    with pytest.raises(ValueError, match="named twice"):
        parse_devices("0,1,0")
    with pytest.raises(ValueError, match="no device"):
        parse_devices(" , ")


def test_the_callers_own_cuda_visible_devices_is_the_list_served():
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3", "PATH": ""}) == ["2", "3"]


def fake_nvidia_smi(folder: Path, lines: str) -> str:
    binary = folder / "nvidia-smi"
    binary.write_text(f"#!/bin/sh\nprintf '{lines}'\n")
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return str(folder)


@pytest.mark.skipif(cuda_available(), reason="NVML answers on a GPU host, before nvidia-smi is asked")
def test_without_nvml_the_gpus_nvidia_smi_lists_are_counted(tmp_path):
    path = fake_nvidia_smi(tmp_path, "0\\n1\\n2\\n")
    assert visible_gpus({"PATH": path}) == ["0", "1", "2"]


@pytest.mark.skipif(cuda_available(), reason="this host has a GPU")
def test_a_host_without_any_gpu_is_told_to_name_its_devices(tmp_path):
    with pytest.raises(NoGpus, match="--devices"):
        visible_gpus({"PATH": str(tmp_path)})
    db = tmp_path / "db.sqlite3"
    done = manage(db, "evaluators", env=env_for(db, PATH=f"{tmp_path}:{os.environ['PATH']}",
                                                CUDA_VISIBLE_DEVICES=""), check=False, timeout=120)
    assert done.returncode != 0 and "name them with --devices" in done.stderr


def environ_of(pid: int) -> dict:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_one_pinned_evaluator_per_device_a_killed_one_comes_back_and_sigterm_stops_all(tmp_path):
    db = tmp_path / "db.sqlite3"
    manage(db, "migrate", "--noinput", "-v", "0")
    env = env_for(db)
    log = tmp_path / "evaluators.log"
    names = {gpu: f"{socket.gethostname()}-cpu-gpu{gpu}" for gpu in ("3", "5")}
    supervisor = start(db, "evaluators", "--devices", "3,5", "--device", "cpu", "--restart-delay", "0.5",
                       "--", "--rekick-seconds", "0", "--poll", "0.2", env=env, log_to=log)
    try:
        def workers():
            rows = dict(query(db, "select name, pid from searches_worker where device_facts != '{}'"))
            return rows if set(names.values()) <= set(rows) else None

        pids = wait_for(workers, timeout=120, what="both evaluators to report")
        for gpu, name in names.items():
            pid = pids[name]
            assert parent_of(pid) == supervisor.pid
            environment = environ_of(pid)
            assert environment["CUDA_VISIBLE_DEVICES"] == gpu
            assert environment["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        [(facts,)] = query(db, "select device_facts from searches_worker where name=?", (names["3"],))
        assert '"vector_width_bits"' in facts and '"caches"' in facts

        # kill -9 of one evaluator: the supervisor starts it again under the same name, the other runs on.
        killed = pids[names["3"]]
        os.kill(killed, signal.SIGKILL)
        restarted = wait_for(lambda: next((pid for (pid,) in query(db, "select pid from searches_worker where name=?",
                                                                  (names["3"],)) if pid != killed and alive(pid)), None),
                             timeout=120, what="the killed evaluator's restart")
        assert parent_of(restarted) == supervisor.pid
        assert alive(pids[names["5"]])

        assert stop(supervisor, timeout=90) == 0, log.read_text()[-3000:]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (alive(restarted) or alive(pids[names["5"]])):
            time.sleep(0.2)
        assert not alive(restarted) and not alive(pids[names["5"]])
        assert "1 restart(s)" in log.read_text()
    finally:
        if supervisor.poll() is None:
            os.killpg(supervisor.pid, signal.SIGKILL)


def test_a_child_that_keeps_dying_young_is_restarted_ever_more_slowly(tmp_path):
    # A stand-in for manage.py that records what it was started with, then fails: the supervisor's
    # real spawning, pinning and back-off, without Django's start-up in every child.
    fake_manage = tmp_path / "manage.py"
    fake_manage.write_text("import os, sys\n"
                           f"open({str(tmp_path / 'starts')!r}, 'a').write("
                           "os.environ['CUDA_VISIBLE_DEVICES'] + ' ' + ' '.join(sys.argv[1:]) + '\\n')\n"
                           "sys.exit(3)\n")
    from evaluation.supervisor import Supervisor

    supervisor = Supervisor(gpus=["7"], device="cuda", evaluator_args=["--pool-size", "2"],
                            manage_py=str(fake_manage), restart_delay=0.2)
    deadline = time.monotonic() + 3.0
    supervisor.run(lambda: time.monotonic() > deadline, interval=0.05)
    [child] = supervisor.children
    starts = (tmp_path / "starts").read_text().splitlines()
    name = f"{socket.gethostname()}-cuda-gpu7"
    assert set(starts) == {f"7 evaluator --device cuda --name {name} --pool-size 2"}
    # waits of 0.4, 0.8, 1.6 s after each early death: 3 or 4 starts in 3 s, never a spin (the last
    # one may be stopped before it wrote its line)
    assert 3 <= child.restarts + 1 <= 4 and len(starts) in (child.restarts, child.restarts + 1)
    assert set(child.exits) == {3} and child.delay == pytest.approx(0.2 * 2 ** len(child.exits))
