"""One fresh process per run, started and policed from the parent.

- Isolation (isolation.py): bubblewrap, as a uid of the sandbox's own slot, with no
  capabilities, no_new_privs, a seccomp filter, a filesystem holding only what the child
  needs (read-only) and a size-limited /tmp; no network, its own PID namespace. Without
  root or bubblewrap the runner refuses to start sandboxes, unless
  KERNELLAB_SANDBOX_ISOLATION=process asks for plain processes (trusted kernels only).
- Limits (limits.py): memory and processes in cgroups, disk as the size of its tmpfs, file
  size and CPU time as rlimits; a limit that ends the run becomes its verdict.
- Environment from an allow-list (nothing inherited wholesale: no API keys, no database
  URLs), its own temp folder and compile caches.
- A wall-clock limit enforced by killing the whole sandbox; stdout/stderr kept to a
  bounded head and tail, and the run stopped when they exceed OUTPUT_LIMIT.
- The verdict comes on a dedicated pipe, each message carrying the job's nonce, each line
  bounded in size and nesting; the parent validates it (schema.py) before using any of it.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..common import compile as compiling
from . import batchclock, bytecode, gpumem, gpustate, isolation, limits, phases, schema
from ..common import exchange, procs, watchdog
from ..common.errors import RunnerError
from .messages import Job, SandboxOutcome
from .streams import Tail, classify_exit

RUNNER_ROOT = str(Path(__file__).resolve().parents[2])
OUTPUT_LIMIT = 8 * 1024 * 1024
MESSAGE_LIMIT = 4 * 1024 * 1024  # one message on the verdict pipe
WARM_UP_LIMIT = 180.0

PASS_THROUGH = (
    "PATH", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "CC", "CXX", "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    # keep NVLink multicast off wherever it is off (it can take a shared host's GPUs down)
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    # models already on disk for KernelBench level 4, read offline (searches/hub_models.py)
    "HF_HUB_CACHE", "HF_HUB_OFFLINE",
)


def default_threads(device: str) -> int:
    configured = os.environ.get("KERNELLAB_THREADS")
    if configured:
        return max(1, int(configured))
    return max(1, min(8, (os.cpu_count() or 2) // 2)) if device == "cpu" else 1


def data_dir() -> str:
    """The project's data folder (database, baselines): never visible in a sandbox."""
    return os.environ.get("KERNELLAB_DATA_DIR") or os.path.join(RUNNER_ROOT, "var")


def cache_root() -> Path:
    """Where the parent keeps its caches (baselines, builds, the bytecode stamp): KERNELLAB_CACHE_DIR if
    set, else the data folder."""
    return Path(os.environ.get("KERNELLAB_CACHE_DIR") or data_dir())


def hidden_paths() -> list[str]:
    """Folders and files a candidate must not see even where they lie under something it
    is given: the project's data and env files, secrets in the home folder, plus whatever
    KERNELLAB_SANDBOX_HIDE lists (colon-separated)."""
    paths = [data_dir(), os.path.join(RUNNER_ROOT, ".env"), os.path.expanduser("~/.ssh"),
             os.path.expanduser("~/.aws"), os.path.expanduser("~/.config"), os.path.expanduser("~/.netrc"),
             os.path.expanduser("~/.cache")]
    paths += [p for p in os.environ.get("KERNELLAB_SANDBOX_HIDE", "").split(":") if p]
    return [p for p in paths if os.path.exists(p)]


def isolation_mode() -> str:
    """"bwrap" (the default) or "process" (only when asked for by name, and only by a parent that
    holds no secrets: a plain process reads its parent's environment through /proc)."""
    wanted = os.environ.get("KERNELLAB_SANDBOX_ISOLATION", "auto")
    if wanted == "process":
        held = isolation.held_secrets()
        if held:
            raise RunnerError(
                f"KERNELLAB_SANDBOX_ISOLATION=process refuses to start sandboxes while this process holds "
                f"{', '.join(held)}: a plain process can read its parent's environment. Start the evaluator "
                f"without them, or use the default isolation (run as root with bubblewrap: scripts/setup "
                f"installs it).")
        return "process"
    if wanted not in ("auto", "bwrap"):
        raise RunnerError(f"KERNELLAB_SANDBOX_ISOLATION must be bwrap or process, not {wanted!r}")
    why = isolation.unavailable_reason()
    if why:
        raise RunnerError(f"cannot start a sandbox: {why}")
    return "bwrap"


FOLDER_PREFIX = "kernellab-sandbox-"


def remove_stale_folders() -> list[str]:
    """Remove the sandbox folders of runners that died without cleaning up (kill -9): each folder's
    name carries the pid of the process that made it, so a live runner's folders are left alone."""
    removed = []
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        owner = name[len(FOLDER_PREFIX):].split("-", 1)[0]
        if not name.startswith(FOLDER_PREFIX) or not owner.isdigit() or procs.alive(int(owner)):
            continue
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        removed.append(name)
    return removed


class Sandbox:
    """One sandbox process, warming up from the moment it is created; used for one job."""

    def __init__(self, device: str, threads: int | None = None):
        self.device = device
        self.threads = threads or default_threads(device)
        self.isolation = isolation_mode()
        self.limits = limits.Limits.from_env(device)
        self.root = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
        os.chmod(self.root, 0o755)
        self.inside_root = isolation.INSIDE_ROOT if self.isolation == "bwrap" else self.root
        self.messages: queue.Queue = queue.Queue()
        self.environment: dict | None = None
        self.output_exceeded = False
        self.warm_wait = 0.0
        self.ready_s: float | None = None
        self._reader: tuple[int, int] | None = None  # (pid, tid) of the thread reading the verdict channel
        self._streams = {"stdout": Tail(), "stderr": Tail()}
        self.slot = isolation.Slot() if self.isolation == "bwrap" else None
        self.cgroups = limits.Cgroups(self.limits) if self.isolation == "bwrap" else None
        self.gpu_cap_mb = gpumem.cap_mb() if device == "cuda" and self.slot is not None else None
        self.gpu_exceeded_mb: int | None = None
        self.measurements = gpustate.Measurements(None)
        self.batches = batchclock.BatchClock(device, threads=self.threads)
        self.exchange_fd: int | None = exchange.create()  # tensors to the trusted judge (exchange.py)
        bytecode.compile_runner()
        bytecode.libraries(device, cache_root())
        try:
            self._start()
        except BaseException:
            self._release()
            raise

    def _env(self) -> dict:
        env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        runner_parent = isolation.INSIDE_RUNNER if self.isolation == "bwrap" else RUNNER_ROOT
        env["PYTHONPATH"] = os.pathsep.join([runner_parent] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.update(compiling.cache_env(self.inside_root, create=self.isolation != "bwrap"))
        threads = str(self.threads)
        env.update({"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "KERNELLAB_THREADS": threads,
                    "KERNELLAB_SANDBOX_ROOT": self.inside_root, "KERNELLAB_ISOLATION": self.isolation,
                    "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "USER": "kernellab",
                    "LOGNAME": "kernellab",
                    # torch.compile compiles on the calling thread: its worker pool would outlive the forward
                    # call that first compiled (a thread left running is refused) and fork inside the sandbox
                    "TORCHINDUCTOR_COMPILE_THREADS": "1"})
        if self.device == "cuda":
            home = compiling.cuda_home()
            if home:
                env.setdefault("CUDA_HOME", home)
                env.setdefault("CUDA_PATH", home)
        return env

    def _workdir(self) -> str:
        path = os.path.join(self.root, "work")
        os.makedirs(path, exist_ok=True)
        return path

    def _start(self) -> None:
        control_read, self._control_write = os.pipe()
        self._verdict_read, verdict_write = os.pipe()
        env = self._env()
        command = [sys.executable, "-s", "-m", "runner.inside.child", str(control_read), str(verdict_write), self.device,
                   str(self.exchange_fd)]
        pass_fds = [control_read, verdict_write]
        if self.isolation == "process":
            cwd = self._workdir()
        else:
            bwrap = isolation.Command(uid=self.slot.uid, device=self.device, disk_mb=self.limits.disk_mb,
                                      host_root=self.root, hidden=hidden_paths(),
                                      extra_paths=compiling.toolchain_homes(self.device))
            work = os.path.join(self.inside_root, "work")
            plan = {"cgroups": [str(f) for f in self.cgroups.folders()],
                    "rlimits": limits.rlimits(self.limits, self.device, self.cgroups),
                    "idle": compiling.idle_builds() and self.cgroups.folders() != []}  # build priority
            command = [sys.executable, "-I", "-S", str(Path(__file__).with_name("launch.py")), json.dumps(plan),
                       *bwrap.args, "--chdir", "/", "--", *bwrap.drop(),
                       "/bin/sh", "-c", f'mkdir -p "{work}" && cd "{work}" && exec "$@"', "sh", *command]
            pass_fds += bwrap.fds
            cwd = "/"
        self.started = time.monotonic()
        try:
            self.process = subprocess.Popen(
                command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, pass_fds=[*pass_fds, self.exchange_fd], start_new_session=True,
            )
        finally:
            for fd in pass_fds:
                os.close(fd)
        for name in ("stdout", "stderr"):
            threading.Thread(target=self._drain, args=(getattr(self.process, name), name), daemon=True).start()
        threading.Thread(target=self._read_verdicts, daemon=True).start()

    # --- reading the process -------------------------------------------------------------

    def _drain(self, stream, name: str) -> None:
        tail = self._streams[name]
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            tail.add(chunk)
            if self._streams["stdout"].total + self._streams["stderr"].total > OUTPUT_LIMIT:
                self.output_exceeded = True
                self.kill()
                break

    def _read_verdicts(self) -> None:
        self._reader = (os.getpid(), threading.get_native_id())  # a carrier of the batch clock's messages
        with os.fdopen(self._verdict_read, "rb") as pipe:
            while True:
                line = pipe.readline(MESSAGE_LIMIT + 1)
                if not line:
                    break
                message = schema.message(line, MESSAGE_LIMIT)  # bounded before json reads it
                if isinstance(message, dict):  # anything else is noise; the nonce check drops the rest
                    if message.get("kind") == "ready" and self.ready_s is None:
                        self.ready_s = time.monotonic() - self.started  # its warm-up, start to ready
                    self.messages.put(message)
                if isinstance(message, schema.Refused):
                    break  # the run ends on it at once
        self.messages.put(None)

    # --- running a job -------------------------------------------------------------------

    def wait_ready(self, limit: float = WARM_UP_LIMIT) -> dict | None:
        """The sandbox's environment once it is warm; None if it died or never got there."""
        if self.environment is not None:
            return self.environment
        deadline = self.started + limit
        while True:
            try:
                message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if message is None:
                return None
            if message.get("kind") == "ready":
                try:
                    self.environment = schema.environment(message.get("environment") or {})
                except schema.Malformed:
                    self.environment = {}
                return self.environment

    def run(self, job: dict, timeout: float, sample_secret: bytes | None = None, pairing=None,
            on_phase=None) -> SandboxOutcome:
        """Send `job`, wait for its verdict within `timeout` seconds (waiting for the device
        does not count), and always end the process. `sample_secret` answers the candidate's
        requests for the seed of an output's sample (sampling.py); `pairing` (pairing.py) joins
        an evaluation's truths and candidate on the CPU; `on_phase` hears its phases (phases.py)."""
        run = Job(self, job, secrets.token_hex(16), phases.Reporter(job.get("job"), on_phase), sample_secret, pairing)
        asked = time.monotonic()
        watch = None
        try:
            ready = self.wait_ready()
            run.began = time.monotonic()
            self.warm_wait = run.began - asked
            if ready is None:
                return self._no_verdict(run.began, timed_out=False, warm_up=True)
            run.deadline = run.began + timeout
            if self.gpu_cap_mb:
                watch = gpumem.Watch(self.slot.uid, self.gpu_cap_mb, self._gpu_exceeded)
            self.send({**job, "nonce": run.nonce})
            run.phase("sent")
            run.calls = watchdog.CallLimit(job.get("call_limit_s"))  # a spinning forward is stopped early
            # what the GPU did while each measurement was timed
            # the pool's other sandboxes are not this one: their work on the GPU is a disturbance
            self.measurements = gpustate.Measurements(gpustate.source_for(self.device, ready),
                                                      is_ours=lambda pid: gpustate.ours(pid, self.process.pid))
            while True:
                try:
                    wake = min(run.deadline, run.calls.check_at())
                    message = self.messages.get(timeout=max(0.01, wake - time.monotonic()))
                except queue.Empty:
                    message = "waited"
                overdue = run.calls.overdue(time.monotonic())
                if overdue:
                    return run.stopped(overdue)
                if message == "waited":
                    if time.monotonic() < run.deadline:
                        continue
                    return self._no_verdict(run.began, timed_out=True)
                if message is None:
                    return self._no_verdict(run.began, timed_out=False)
                if isinstance(message, schema.Refused):
                    return run.refused(message["why"])
                if message.get("nonce") != run.nonce:
                    continue
                outcome = run.handle(message)  # one handler per kind (messages.py)
                if outcome is not None:
                    return outcome
        finally:
            if watch is not None:
                watch.stop()
            self.kill()
            if run.lock is not None:
                run.lock.release()
            self.cleanup()

    def pids(self) -> list[int]:
        """The sandbox's processes: those its cgroup lists, else its process and every one below it."""
        return (self.cgroups.processes() if self.cgroups else None) or procs.descendants(self.process.pid)

    def cpu_seconds(self) -> tuple[float | None, float | None] | None:
        """The sandbox's (running, waiting) CPU seconds so far (batchclock.readings), waiting counting the
        parent's threads that read and handle its messages: this one and the reader."""
        carriers = [(os.getpid(), threading.get_native_id())] + ([self._reader] if self._reader else [])
        return batchclock.readings(self.process.pid, self.pids(), self.cgroups and self.cgroups.cpu_seconds(),
                                   carriers)

    def take_exchange(self) -> int:
        """The exchange memfd, from now on the caller's to close (after the trusted judge read it)."""
        fd, self.exchange_fd = self.exchange_fd, None
        return fd

    def _gpu_exceeded(self, used_mb: int) -> None:
        self.gpu_exceeded_mb = used_mb
        self.kill()

    def send(self, message: dict) -> None:
        try:
            os.write(self._control_write, (json.dumps(message) + "\n").encode())
        except OSError:
            pass  # it died; the verdict queue says so

    def _no_verdict(self, began: float, *, timed_out: bool, warm_up: bool = False) -> SandboxOutcome:
        if not timed_out and not self.output_exceeded:
            try:  # its verdict pipe closed: let bubblewrap report how the child ended before killing
                self.process.wait(timeout=20)  # (tearing down a CUDA process can take seconds)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        seconds = time.monotonic() - began
        if self.gpu_exceeded_mb is not None:
            status, reason = "oom", (f"the sandbox went past its GPU memory limit of {self.gpu_cap_mb} MB "
                                     f"(NVML saw {self.gpu_exceeded_mb} MB) and was killed")
        elif timed_out:
            status, reason = "timeout", f"no verdict within the {seconds:.0f} s limit; the run was killed"
        elif self.output_exceeded:
            status, reason = "runtime_error", (f"the kernel printed more than {OUTPUT_LIMIT // (1024 * 1024)} MB "
                                               "to stdout/stderr; output is limited and the run was stopped")
        elif warm_up:
            status, reason = "crashed", f"the sandbox did not start: {compiling.last_line(self.stderr[-2000:])}"
        else:
            status, reason = classify_exit(code, self.stderr)
        limited = self.limit_hit(status, reason, code)
        if limited and not timed_out and self.gpu_exceeded_mb is None and not self.output_exceeded:
            status, reason = limited
        return SandboxOutcome(status=status, reason=reason, stdout=self.stdout, stderr=self.stderr,
                              seconds=seconds, started=not warm_up)

    def limit_hit(self, status: str, reason: str, code: int | None = 0, log: str = ""):
        """(status, reason) naming the limit that ended or failed this run, else None. `code`
        is the exit status of a run that ended without a verdict; 0 where a verdict came (the
        parent killed the process afterwards, so its exit status says nothing)."""
        if self.cgroups is None:
            return None
        return limits.explain(status, reason, code, self.limits, self.cgroups, log or self.stderr[-4000:])

    def describe_limits(self) -> dict | None:
        if not self.cgroups:
            return None
        described = limits.describe(self.limits, self.cgroups, self.device)
        if self.device == "cuda":
            described.update(gpu_memory_mb=self.gpu_cap_mb, gpu_memory_by="NVML" if self.gpu_cap_mb else "none")
        return described

    @property
    def stdout(self) -> str:
        return self._streams["stdout"].text()

    @property
    def stderr(self) -> str:
        return self._streams["stderr"].text()

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.cgroups is not None:
            self.cgroups.kill_all()  # whatever left the process group (bubblewrap starts new sessions)

    def cleanup(self) -> None:
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.close(self._control_write)
        except OSError:
            pass
        self._release()

    def _release(self) -> None:
        """Give back what this sandbox held, once nothing of it runs any more."""
        if self.cgroups is not None:
            for _ in range(50):
                self.cgroups.kill_all()
                if not any(_has_processes(f) for f in self.cgroups.folders()):
                    break
                time.sleep(0.02)
            self.cgroups.settle()
            self.cgroups.remove()
        if self.slot is not None:
            self.slot.release()
            self.slot = None
        if self.exchange_fd is not None:
            os.close(self.exchange_fd)
            self.exchange_fd = None
        shutil.rmtree(self.root, ignore_errors=True)

    def discard(self) -> None:
        self.kill()
        self.cleanup()


def _has_processes(folder) -> bool:
    try:
        return bool((folder / "cgroup.procs").read_text().split())
    except OSError:
        return False
