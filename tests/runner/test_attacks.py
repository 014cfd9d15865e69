"""The attack corpus (tests/runner/attacks/): each attack runs as problem code in a real
sandbox with small limits and must fail, classified; the next honest kernel is then judged
right. Problem code is as untrusted as kernel code and passes no static check first, so
these attacks test the sandbox's own walls."""

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

import runner
from runner.host import filetable
from runner.host.checks import check_source

from . import sources

ATTACKS = Path(__file__).with_name("attacks")
ROOT = Path(__file__).resolve().parents[2]
SMALL_LIMITS = {"KERNELLAB_SANDBOX_MEMORY_MB": "512", "KERNELLAB_SANDBOX_PROCESSES": "64",
                "KERNELLAB_SANDBOX_DISK_MB": "256", "KERNELLAB_SANDBOX_FILES": "256",
                "KERNELLAB_SANDBOX_CONCURRENT": "1"}  # one pool: the files' limit is not lowered to fit the host
DENIED = "Operation not permitted"
ABSENT = "No such file or directory"
NOT_WRITABLE = ("Read-only file system", "Permission denied")  # a read-only mount, or not the slot uid's
FAMILY_REFUSED = "[Errno 13] Permission denied"  # the filter's EACCES; a family the kernel lacks gives errno 97

EXPECTED = {
    "umount_tmp": DENIED, "mount_tmpfs": DENIED, "unshare_user": DENIED, "ptrace_parent": DENIED,
    "process_vm_readv": DENIED, "keyctl": DENIED, "setuid_root": DENIED, "move_cores": DENIED,
    "read_shadow": ABSENT, "read_database": ABSENT, "read_canary": ABSENT, "write_repository": (ABSENT, "Permission denied"),
    "host_tmp": ABSENT, "unix_socket": ABSENT, "write_venv": NOT_WRITABLE, "write_runner": NOT_WRITABLE,
    "poison_baselines": "no baseline cache visible", "home_cache": "Permission denied",
    "abstract_socket": "Connection refused", "vsock_socket": FAMILY_REFUSED, "inet_socket": FAMILY_REFUSED,
    "memory": "memory limit of 512 MB", "processes": "process limit (64", "disk": "limit (256 MB)",
}


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """What an attacker would want on the host: a data folder with a database and a canary,
    a marker in the host's /tmp, a listening Unix socket and an abstract one."""
    data = tmp_path_factory.mktemp("data")
    (data / "kernellab.sqlite3").write_bytes(b"SQLite format 3\x00 admin session")
    (data / "canary.txt").write_text("sk-canary-" + uuid.uuid4().hex)
    marker = Path("/tmp") / f"kernellab-marker-{uuid.uuid4().hex}"
    marker.write_text("host /tmp")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    socket_path = str(data / "host.sock")
    listener.bind(socket_path)
    listener.listen(1)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f"kernellab-attack-{uuid.uuid4().hex}"
    abstract.bind("\0" + abstract_name)
    abstract.listen(1)
    saved = {k: os.environ.get(k) for k in [*SMALL_LIMITS, "KERNELLAB_DATA_DIR"]}
    os.environ.update(SMALL_LIMITS, KERNELLAB_DATA_DIR=str(data))
    yield {"data_dir": str(data), "marker": str(marker), "socket_path": socket_path, "abstract_name": abstract_name,
           "repo": str(ROOT), "cache_dir": os.environ["KERNELLAB_CACHE_DIR"]}
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    listener.close()
    abstract.close()
    marker.unlink()


@pytest.fixture(scope="module")
def pool(host):
    with runner.Pool(device="cpu", size=1) as warm:
        honest = warm.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=1)  # fills the baseline cache
        assert honest["status"] == "correct", honest["reason"]
        yield warm


def attack_source(name: str, host: dict) -> str:
    text = "\n".join((ATTACKS / f"{n}.py").read_text() for n in ("_prelude", name, "_problem"))
    for key, value in host.items():
        text = text.replace("{" + key + "}", value)
    return text


def honest_is_judged_right(pool) -> None:
    verdict = pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=2)
    assert verdict["status"] == "correct", verdict["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_attack_fails_and_is_classified(name, host, pool):
    result = pool.validate(attack_source(name, host), seed=0)
    assert result["status"] == "invalid", f"the attack {name} was not stopped"
    expected = EXPECTED[name] if isinstance(EXPECTED[name], tuple) else (EXPECTED[name],)
    assert any(e in result["reason"] for e in expected), result["reason"]
    if name in ("memory", "processes", "disk"):  # what a limit leaves behind must not hurt the next one
        honest_is_judged_right(pool)


@pytest.mark.slow
def test_nothing_of_the_attacks_reached_the_host(host, pool):
    site = Path(subprocess.check_output([sys.executable, "-c", "import sysconfig;"
                                         "print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    assert not (site / "kernellab_attack.pth").exists()
    assert not (ROOT / "kernellab_attack.txt").exists()
    assert "# attacked" not in (ROOT / "runner" / "inside" / "jobs.py").read_text()
    honest_is_judged_right(pool)


@pytest.mark.slow
def test_attacks_through_the_command_line(host, tmp_path):
    """`python -m runner validate` on an attack: exit 0 and the classified verdict."""
    for name in ("umount_tmp", "read_database"):
        path = tmp_path / f"{name}.py"
        path.write_text(attack_source(name, host))
        env = {k: v for k, v in os.environ.items() if k.startswith(("KERNELLAB_", "PATH", "HOME", "LANG"))}
        done = subprocess.run([sys.executable, "-m", "runner", "validate", str(path), "--device", "cpu", "--json"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert '"status": "invalid"' in done.stdout and EXPECTED[name] in done.stdout, done.stdout


# --- the static-check evasions ----------------------------------------------------------------

EVASIONS = ATTACKS / "evasions"
EVADING = {
    "builtins_exec": "imports builtins",
    "numpy_dict": "numpy.__dict__",
    "getattr_after_first": "torch.softmax",
    "helper_fallback": "keeps torch.nn.functional.softmax as a value",
    "import_thread_pool": "imports builtins",
}


def evasion_source(name: str) -> str:
    return (EVASIONS / "_base.py").read_text() + "\n\n" + (EVASIONS / f"{name}.py").read_text()


@pytest.mark.parametrize("name", sorted(EVADING))
def test_static_evasions_are_refused(name):
    reasons = check_source(evasion_source(name), reference_source=sources.SOFTMAX_PROBLEM, device="cpu")
    assert any(EVADING[name] in r for r in reasons), reasons


@pytest.mark.slow
def test_static_evasion_through_the_command_line(tmp_path):
    problem, kernel = tmp_path / "p.py", tmp_path / "k.py"
    problem.write_text(sources.SOFTMAX_PROBLEM)
    kernel.write_text(evasion_source("helper_fallback"))
    env = {k: v for k, v in os.environ.items() if k.startswith(("KERNELLAB_", "PATH", "HOME", "LANG"))}
    done = subprocess.run([sys.executable, "-m", "runner", "evaluate", str(problem), str(kernel), "--device", "cpu",
                           "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"status": "rejected"' in done.stdout and "keeps torch.nn.functional.softmax" in done.stdout


RECORDED_CALLS = r'''
import sys, torch
from pathlib import Path
from runner.common import launches
from runner.inside import jobs
from runner.inside.problem import load_module
counter = launches.LaunchCounter([sys.argv[2]])
counter.install()
kernel = load_module(open(sys.argv[1]).read(), Path(sys.argv[2]) / "kernel_copy.py", "kernellab_kernel")
new, state, x = kernel.ModelNew(), {"first": True, "ops": []}, torch.randn(8, 64)
jobs._call(new, [x], state, counter, False, lambda: None)
try:
    jobs._call(new, [x], state, counter, False, lambda: None)
except jobs.Verdict as verdict:
    print(verdict.status, verdict.reason)
'''


@pytest.mark.slow
def test_ops_are_recorded_on_calls_after_the_first(tmp_path):
    """A kernel that runs its own kernel only on the first call and PyTorch afterwards (past
    the static checks, e.g. through a name they cannot resolve) is refused at run time."""
    path = tmp_path / "kernel.py"
    path.write_text(evasion_source("getattr_after_first"))
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", RECORDED_CALLS, str(path), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.startswith("rejected forward computes with PyTorch on untimed call 2"), done.stdout + done.stderr


# --- forged verdicts --------------------------------------------------------------------------

MALFORMED = {"status": "correct", "compile": {"seconds": "not-a-number", "log": ""}}
PLAUSIBLE = {"status": "correct", "reason": "", "precision": "fp32", "compile": {"seconds": 0.1, "log": ""},
             "correctness": {"atol": 1e-5, "rtol": 1e-5, "passed": True, "per_distribution": [
                 {"name": "get_inputs", "trials": 3, "err": 0.1, "ref_fp32_err": 0.1, "max_abs_err": 1e-7,
                  "skipped": False, "passed": True}]},
             "timing": {"median_ms": 0.008, "samples_ms": [0.008] * 20}, "device_fault": False, "phases": {}, "log": ""}


@pytest.mark.slow
def test_a_malformed_forged_verdict_is_rejected_not_raised(pool):
    result = pool.evaluate(forging("forge_verdict", MALFORMED), sources.SILU_KERNEL, seed=3)
    assert result["status"] == "rejected"
    assert "malformed verdict" in result["reason"] and "compile.seconds" in result["reason"], result["reason"]
    honest_is_judged_right(pool)


def forging(name: str, verdict: dict, with_outputs: bool = False) -> str:
    text = (ATTACKS / f"{name}.py").read_text().replace("{FORGED}", repr(verdict))
    return text.replace("{WITH_OUTPUTS}", repr(with_outputs))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["forge_verdict", "forge_frames", "forge_proc_mem"])
def test_a_plausible_forged_verdict_is_not_believed(pool, name):
    """Correctness is the trusted judge's (runner/judge/referee.py): a well-formed `correct` sent from the
    candidate's process, found through gc, frames or /proc/self/mem, has no outputs behind it."""
    result = pool.evaluate(forging(name, PLAUSIBLE), sources.SILU_KERNEL, seed=4)
    assert result["status"] != "correct", result
    if name != "forge_proc_mem" or result["status"] == "rejected":  # it may find no nonce: then no verdict
        assert "the candidate's sandbox sent no outputs" in result["reason"], result["reason"]
    honest_is_judged_right(pool)


@pytest.mark.slow
def test_a_forged_verdict_with_outputs_of_its_own_is_judged_on_them(pool):
    """The forger also fills the exchange memory and lists what it put there: the judge compares
    those outputs with the truths made in the problem's own sandbox, whatever the verdict says."""
    result = pool.evaluate(forging("forge_frames", PLAUSIBLE, with_outputs=True), sources.SILU_KERNEL, seed=5)
    assert result["status"] == "incorrect", result["reason"]
    assert result["correctness"]["passed"] is False
    honest_is_judged_right(pool)


@pytest.mark.slow
@pytest.mark.serial
def test_forged_low_times_are_caught_by_the_batch_clock(pool):
    """Samples twenty times lower than measured (the runner's timer functions replaced, which no
    guard in the candidate's process watches): the parent's own clock over batches refuses them."""
    problem = (ATTACKS / "forge_timing.py").read_text()
    result = pool.evaluate(problem, sources.SOFTMAX_KERNEL, seed=6)
    assert result["status"] == "rejected", result["reason"]
    assert "below what the parent's clock allows" in result["reason"], result["reason"]
    batch = next(m for m in result["measurements"] if m["what"] == "batch")
    assert batch["slope_ms"] > 2 * batch["reported_ms"] and result["timing"] is None
    honest = pool.evaluate(sources.SOFTMAX_PROBLEM, sources.SOFTMAX_KERNEL, seed=7)
    assert honest["status"] == "correct", honest["reason"]


@pytest.mark.slow
def test_open_files_past_the_limit_are_named_and_the_host_table_is_spared(host, pool):
    """Nine processes open files until refused: the verdict names the open-file limit, and the
    host's count of open files (fs.file-nr) rises by less than the sandbox's bound (its processes
    times its files per process) while they hold them."""
    bound = int(SMALL_LIMITS["KERNELLAB_SANDBOX_PROCESSES"]) * int(SMALL_LIMITS["KERNELLAB_SANDBOX_FILES"])
    before = filetable.table()[0]
    peak, done = [before], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], filetable.table()[0])
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = pool.validate(attack_source("open_files", host), seed=0)
    finally:
        done.set()
        watcher.join()
    assert result["status"] == "invalid", result
    assert "open-file limit (256 open files per process" in result["reason"], result["reason"]
    assert "Too many open files" in result["reason"], result["reason"]
    assert peak[0] - before < bound, (before, peak[0], bound)  # without the limit: 45,000 and more
    honest_is_judged_right(pool)


@pytest.mark.slow
def test_cpu_time_past_the_limit_is_named(host, monkeypatch):
    monkeypatch.setenv("KERNELLAB_SANDBOX_CPU_S", "12")  # warm-up takes a few CPU seconds of it
    with runner.Pool(device="cpu", size=0) as own:
        result = own.validate(attack_source("cpu_time", host), seed=0)
    assert result["status"] == "invalid"
    assert "CPU time limit (12 s)" in result["reason"], result["reason"]
