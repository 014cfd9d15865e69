"""One evaluator per GPU on a host: find the GPUs, start an `evaluator` child pinned to each with
CUDA_VISIBLE_DEVICES, restart a child that dies, stop them all on SIGTERM.

The parent never makes a CUDA context (it would be inherited by nothing, but costs memory on every
GPU and is what the evaluators themselves must avoid): GPUs are counted with NVML or nvidia-smi,
which read the driver's state. Standard library only, so it runs before Django is set up.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

RESTART_DELAY = 2.0
MAX_RESTART_DELAY = 60.0
STEADY_AFTER = 60.0  # a child that lived this long died of something new: restart at once again


class NoGpus(RuntimeError):
    """No GPU could be found on this host."""


def visible_gpus(environ=None) -> list[str]:
    """The GPUs to serve, as CUDA_VISIBLE_DEVICES entries: the caller's own CUDA_VISIBLE_DEVICES when
    set (a host shared with other work), else every GPU NVML or nvidia-smi lists, by index. An empty
    CUDA_VISIBLE_DEVICES counts as unset: shells and service files often export it blank."""
    environ = os.environ if environ is None else environ
    pinned = environ.get("CUDA_VISIBLE_DEVICES")
    if pinned is not None and pinned.strip():
        return parse_devices(pinned)
    count = _nvml_count()
    if count is None:
        count = _nvidia_smi_count(environ)
    if not count:
        raise NoGpus("no GPU found (neither NVML nor nvidia-smi lists one); name them with --devices")
    return [str(index) for index in range(count)]


def parse_devices(text: str) -> list[str]:
    """"0,1, 3" -> ["0", "1", "3"]; UUIDs and MIG names pass through. Duplicates are refused: two
    evaluators on one GPU would time each other's kernels."""
    devices = [part.strip() for part in text.split(",") if part.strip()]
    if not devices:
        raise ValueError("no device named")
    if len(set(devices)) != len(devices):
        raise ValueError(f"a device is named twice in {text!r}")
    return devices


def _nvml_count() -> int | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None


def _nvidia_smi_count(environ) -> int | None:
    binary = shutil.which("nvidia-smi", path=environ.get("PATH"))
    if binary is None:
        return None
    try:
        done = subprocess.run([binary, "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30, env=dict(environ))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return sum(1 for line in done.stdout.splitlines() if line.strip().isdigit())


def worker_name(device: str, gpu: str) -> str:
    # The evaluator's own default for a pinned GPU, spelled out so every child's name is certain.
    return f"{socket.gethostname()}-{device}-gpu{gpu.replace(',', '_')}"


@dataclass
class Child:
    gpu: str
    argv: list[str]
    env: dict
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    restarts: int = 0
    delay: float = RESTART_DELAY
    due_at: float = 0.0  # when a dead child is started again
    exits: list[int] = field(default_factory=list)


class Supervisor:
    """Keeps one child per GPU running. `poll()` restarts the dead (waiting longer each time one
    dies young, so a broken GPU or a bad setting does not spin); `stop()` ends them all."""

    def __init__(self, *, gpus: list[str], device: str = "cuda", evaluator_args: list[str] = (),
                 manage_py: str | None = None, environ=None, restart_delay: float = RESTART_DELAY):
        environ = dict(os.environ if environ is None else environ)
        manage_py = manage_py or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "manage.py")
        self.restart_delay = restart_delay
        self.children = []
        for gpu in gpus:
            # PCI bus order: the order nvidia-smi and NVML number GPUs in, so "1" is the same GPU for both.
            env = {**environ, "CUDA_VISIBLE_DEVICES": gpu, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
            argv = [sys.executable, manage_py, "evaluator", "--device", device, "--name", worker_name(device, gpu),
                    *evaluator_args]
            self.children.append(Child(gpu=gpu, argv=argv, env=env, delay=restart_delay))

    def start(self) -> None:
        for child in self.children:
            self._spawn(child)

    def _spawn(self, child: Child) -> None:
        child.process = subprocess.Popen(child.argv, env=child.env, preexec_fn=_die_with_parent)
        child.started_at = time.monotonic()
        log.info("evaluator for GPU %s started (pid %d)", child.gpu, child.process.pid)

    def poll(self) -> None:
        now = time.monotonic()
        for child in self.children:
            if child.process is not None and child.process.poll() is None:
                continue
            if child.process is not None:  # it just died: schedule its restart
                code = child.process.returncode
                child.exits.append(code)
                lived = now - child.started_at
                child.delay = self.restart_delay if lived >= STEADY_AFTER else min(child.delay * 2, MAX_RESTART_DELAY)
                wait = 0.0 if lived >= STEADY_AFTER else child.delay
                child.due_at = now + wait
                child.process = None
                log.warning("evaluator for GPU %s exited (status %s after %.1f s); restarting in %.1f s",
                            child.gpu, code, lived, wait)
            if now >= child.due_at:
                child.restarts += 1
                self._spawn(child)

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM every child (each hands its running job back), then SIGKILL what is left."""
        running = [c.process for c in self.children if c.process is not None and c.process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        end = time.monotonic() + timeout
        for process in running:
            try:
                process.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def run(self, should_stop, interval: float = 0.5) -> None:
        self.start()
        try:
            while not should_stop():
                time.sleep(interval)
                if should_stop():  # Ctrl-C reaches the children too: never restart one it just stopped
                    break
                self.poll()
        finally:
            self.stop()


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the supervisor dies (kill -9 included), so a
    restarted supervisor never finds the old evaluators holding their names. The supervisor starts
    children from its main thread only, which lives as long as it does."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
