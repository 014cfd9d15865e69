"""One fresh process per run, started and policed from the parent.

- Environment from an allow-list (nothing inherited wholesale: no API keys, no database
  URLs), its own temp folder and compile caches.
- Isolation: where unprivileged namespaces work, the process gets its own user, PID, mount
  and network namespaces (no network; /proc shows only the sandbox, so no other process's
  environment can be read; the project's data folder and secret files are hidden under
  empty mounts). Elsewhere a plain process (then the process that starts sandboxes must
  hold no secrets itself: see docs/KERNEL_FORMAT.md).
- A wall-clock limit enforced by killing the whole process group; stdout/stderr kept to a
  bounded head and tail, and the run stopped when they exceed OUTPUT_LIMIT.
- The verdict comes on a dedicated pipe, each message carrying the job's nonce.
"""

from __future__ import annotations

import fcntl
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

from . import compile as compiling

RUNNER_ROOT = str(Path(__file__).resolve().parent.parent)
OUTPUT_LIMIT = 8 * 1024 * 1024
KEEP_OUTPUT = 8 * 1024
WARM_UP_LIMIT = 180.0

PASS_THROUGH = (
    "PATH", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "CC", "CXX", "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    # keep NVLink multicast off wherever it is off (it can take a shared host's GPUs down)
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
)

_isolation_works: dict[str, bool] = {}
_device_lock = threading.Lock()


class SandboxOutcome:
    """What came back from one run: the verdict dict, or why there is none."""

    def __init__(self, result=None, status=None, reason="", stdout="", stderr="", seconds=0.0):
        self.result, self.status, self.reason = result, status, reason
        self.stdout, self.stderr, self.seconds = stdout, stderr, seconds


def default_threads(device: str) -> int:
    configured = os.environ.get("KERNELLAB_THREADS")
    if configured:
        return max(1, int(configured))
    return max(1, min(8, (os.cpu_count() or 2) // 2)) if device == "cpu" else 1


def hidden_paths() -> list[str]:
    """Folders and files a candidate must not see: the project's data and env files,
    plus whatever KERNELLAB_SANDBOX_HIDE lists (colon-separated)."""
    paths = [os.path.join(RUNNER_ROOT, "var"), os.path.join(RUNNER_ROOT, ".env"), os.path.expanduser("~/.ssh"),
             os.path.expanduser("~/.aws"), os.path.expanduser("~/.config"), os.path.expanduser("~/.netrc")]
    paths += [p for p in os.environ.get("KERNELLAB_SANDBOX_HIDE", "").split(":") if p]
    if os.environ.get("KERNELLAB_DATA_DIR"):
        paths.append(os.environ["KERNELLAB_DATA_DIR"])
    return [p for p in paths if os.path.exists(p)]


def isolation_mode() -> str:
    wanted = os.environ.get("KERNELLAB_SANDBOX_ISOLATION", "auto")
    if wanted in ("process", "namespaces"):
        return wanted
    if "auto" not in _isolation_works:
        _isolation_works["auto"] = _namespaces_work()
    return "namespaces" if _isolation_works["auto"] else "process"


def _namespaces_work() -> bool:
    unshare = shutil.which("unshare")
    if not unshare:
        return False
    try:
        done = subprocess.run([unshare, *_UNSHARE_FLAGS, "true"], capture_output=True, timeout=10)
        return done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def isolation_failed() -> None:
    """Namespaces were probed fine but a sandbox could not start in them: use processes."""
    _isolation_works["auto"] = False


_UNSHARE_FLAGS = ["--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--net", "--kill-child"]
_HIDE_SCRIPT = (
    'for p in "$@"; do [ "$p" = "--" ] && break; '
    'if [ -d "$p" ]; then mount -t tmpfs -o size=1k,mode=000 none "$p" 2>/dev/null; '
    'else mount --bind /dev/null "$p" 2>/dev/null; fi; shift; done; shift; "$@"'
)
# The shell stays as the namespace's PID 1 and runs Python as its child: as PID 1, Python
# would ignore its own SIGABRT (abort() then ends in SIGSEGV) and misreport the fault.


class Sandbox:
    """One sandbox process, warming up from the moment it is created; used for one job."""

    def __init__(self, device: str, threads: int | None = None):
        self.device = device
        self.threads = threads or default_threads(device)
        self.isolation = isolation_mode()
        self.root = tempfile.mkdtemp(prefix="kernellab-sandbox-")
        os.chmod(self.root, 0o755)
        self.messages: queue.Queue = queue.Queue()
        self.environment: dict | None = None
        self.output_exceeded = False
        self.warm_wait = 0.0
        self._streams = {"stdout": _Tail(), "stderr": _Tail()}
        self._start()

    def _env(self) -> dict:
        env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env["PYTHONPATH"] = os.pathsep.join([RUNNER_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.update(compiling.cache_env(self.root))
        threads = str(self.threads)
        env.update({"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "KERNELLAB_THREADS": threads,
                    "KERNELLAB_SANDBOX_ROOT": self.root, "KERNELLAB_ISOLATION": self.isolation,
                    "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
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
        command = [sys.executable, "-s", "-m", "runner.child", str(control_read), str(verdict_write), self.device]
        if self.isolation == "namespaces":
            command = [shutil.which("unshare"), *_UNSHARE_FLAGS, "/bin/sh", "-c", _HIDE_SCRIPT, "sh",
                       *hidden_paths(), "--", *command]
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            command, env=self._env(), cwd=self._workdir(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, pass_fds=(control_read, verdict_write), start_new_session=True,
        )
        os.close(control_read)
        os.close(verdict_write)
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
        with os.fdopen(self._verdict_read, "rb") as pipe:
            for line in pipe:
                try:
                    self.messages.put(json.loads(line))
                except ValueError:
                    continue  # noise; the nonce check drops anything else
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
                self.environment = message.get("environment") or {}
                return self.environment

    def run(self, job: dict, timeout: float) -> SandboxOutcome:
        """Send `job`, wait for its verdict within `timeout` seconds (waiting for the device
        does not count), and always end the process."""
        nonce = secrets.token_hex(16)
        asked = time.monotonic()
        lock = None
        try:
            ready = self.wait_ready()
            began = time.monotonic()
            self.warm_wait = began - asked
            if ready is None:
                return self._no_verdict(began, timed_out=False, warm_up=True)
            deadline = began + timeout
            self._send({**job, "nonce": nonce})
            while True:
                try:
                    message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
                except queue.Empty:
                    return self._no_verdict(began, timed_out=True)
                if message is None:
                    return self._no_verdict(began, timed_out=False)
                if message.get("nonce") != nonce:
                    continue
                if message.get("kind") == "device" and lock is None:
                    waited = time.monotonic()
                    lock = DeviceLock(self.device).acquire()
                    deadline += time.monotonic() - waited
                    self._send({"go": True})
                elif message.get("kind") == "verdict":
                    return SandboxOutcome(result=message.get("result") or {}, stdout=self.stdout,
                                          stderr=self.stderr, seconds=time.monotonic() - began)
        finally:
            self.kill()
            if lock is not None:
                lock.release()
            self.cleanup()

    def _send(self, message: dict) -> None:
        try:
            os.write(self._control_write, (json.dumps(message) + "\n").encode())
        except OSError:
            pass  # it died; the verdict queue says so

    def _no_verdict(self, began: float, *, timed_out: bool, warm_up: bool = False) -> SandboxOutcome:
        self.kill()
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        seconds = time.monotonic() - began
        if timed_out:
            status, reason = "timeout", f"no verdict within the {seconds:.0f} s limit; the run was killed"
        elif self.output_exceeded:
            status, reason = "runtime_error", (f"the kernel printed more than {OUTPUT_LIMIT // (1024 * 1024)} MB "
                                               "to stdout/stderr; output is limited and the run was stopped")
        elif warm_up:
            status, reason = "crashed", f"the sandbox did not start: {compiling.first_line(self.stderr[-2000:])}"
        else:
            status, reason = classify_exit(code, self.stderr)
        return SandboxOutcome(status=status, reason=reason, stdout=self.stdout, stderr=self.stderr,
                              seconds=seconds)

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

    def cleanup(self) -> None:
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.close(self._control_write)
        except OSError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)

    def discard(self) -> None:
        self.kill()
        self.cleanup()


def classify_exit(code: int | None, stderr: str) -> tuple[str, str]:
    if code is None:
        return "crashed", "the sandbox could not be stopped cleanly"
    if code < 0 or code > 128:
        number = -code if code < 0 else code - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGKILL:
            return "oom", "the process was killed (SIGKILL) without a verdict, most likely out of memory"
        if number == signal.SIGSEGV:
            return "crashed", "segmentation fault (SIGSEGV): the kernel touched memory it does not own"
        return "crashed", f"the process died from {name}"
    if "MemoryError" in stderr or "out of memory" in stderr.lower():
        return "oom", "out of memory"
    return "crashed", f"the process exited with status {code} before reporting a verdict (os._exit or sys.exit?)"


class _Tail:
    """Keeps the first and last KEEP_OUTPUT bytes of a stream and counts the rest."""

    def __init__(self):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(self.head) < KEEP_OUTPUT:
            take = KEEP_OUTPUT - len(self.head)
            self.head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            self.tail = (self.tail + chunk)[-KEEP_OUTPUT:]

    def text(self) -> str:
        skipped = self.total - len(self.head) - len(self.tail)
        middle = f"\n... ({skipped} bytes not kept) ...\n" if skipped > 0 else ""
        return (bytes(self.head) + middle.encode() + bytes(self.tail)).decode(errors="replace")


class DeviceLock:
    """Nothing else runs on a GPU while a candidate is judged there: a lock inside this
    process and a file lock across processes (several workers on one host)."""

    def __init__(self, device: str):
        self.device = device
        self._file = None

    def acquire(self) -> "DeviceLock":
        if self.device != "cuda":
            return self
        _device_lock.acquire()
        which = os.environ.get("CUDA_VISIBLE_DEVICES", "all").replace(",", "_") or "all"
        self._file = open(os.path.join(tempfile.gettempdir(), f"kernellab-gpu-{which}.lock"), "w")
        fcntl.flock(self._file, fcntl.LOCK_EX)
        return self

    def release(self) -> None:
        if self.device != "cuda" or self._file is None:
            return
        fcntl.flock(self._file, fcntl.LOCK_UN)
        self._file.close()
        self._file = None
        _device_lock.release()
