"""The parent's side of the trusted judge (referee.py): start it once per pool, send it the
sealed exchange memories of one evaluation, read its comparison back. A pool on a GPU keeps
several (`Referees`): one comparison at a time each, so evaluations finishing together do not
queue behind one process. Plain Python: the parent never imports torch.

The judge runs as a plain child of the parent, outside bubblewrap, under the parent's user:
it runs runner code only, its inputs are sealed memories and descriptions it checks, and a
sandbox cannot reach it (no shared socket, no PID of its namespace). Its environment is the
sandboxes' allow-list, with no GPU visible.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading

from ..common.errors import RunnerError

MESSAGE = 1 << 20
START_LIMIT_S = 180.0
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PASS = ("PATH", "LANG", "LC_ALL", "TZ", "LD_LIBRARY_PATH", "PYTHONPATH")


def judge_threads() -> int:
    """The CPU threads a pool's judging gets in all: half the host's cores, 1 to 8."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


class Referee:
    def __init__(self, threads: int | None = None):
        self.threads = threads or judge_threads()
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._log = None
        self._waiting = False

    def start(self) -> None:
        """Start the judge's process (torch imported there in the background); `judge` waits for it."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: os.environ[k] for k in PASS if k in os.environ}
        env.update(PYTHONPATH=os.pathsep.join([ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])),
                   CUDA_VISIBLE_DEVICES="", KERNELLAB_REFEREE_THREADS=str(self.threads),
                   OMP_NUM_THREADS=str(self.threads), PYTHONDONTWRITEBYTECODE="1")
        self._log = tempfile.TemporaryFile()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-s", "-m", "runner.judge.referee", str(theirs.fileno())], env=env, cwd=ROOT,
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, pass_fds=[theirs.fileno()])
        finally:
            theirs.close()
        self._sock, self._waiting = ours, True

    def _ready(self) -> None:
        if self._process is None or self._process.poll() is not None:
            self.close()
            self.start()
        if self._waiting:
            self._receive(START_LIMIT_S)
            self._waiting = False

    def judge(self, request: dict, truths_fd: int, outputs_fd: int, timeout: float) -> dict:
        """The judge's comparison of one evaluation; raises RunnerError if it could not answer."""
        with self._lock:
            self._ready()
            try:
                socket.send_fds(self._sock, [json.dumps(request).encode()], [truths_fd, outputs_fd])
                return self._receive(timeout)
            except (OSError, ValueError) as exc:
                self.close()
                raise RunnerError(f"the trusted judge did not answer: {exc}") from None

    def _receive(self, timeout: float) -> dict:
        self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(MESSAGE)
        except OSError as exc:
            self.close()
            raise RunnerError(f"the trusted judge did not answer: {exc}") from None
        if not data:
            why = self._tail()
            self.close()
            raise RunnerError(f"the trusted judge ended: {why}")
        return json.loads(data)

    def _tail(self) -> str:
        try:
            self._log.seek(0)
            return self._log.read()[-2000:].decode(errors="replace").strip().splitlines()[-1]
        except (OSError, IndexError, AttributeError):
            return "no message"

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._log is not None:
            self._log.close()
            self._log = None


class Referees:
    """`count` judges sharing the CPU threads one would have; `judge` takes a free one."""

    def __init__(self, count: int = 1, threads: int | None = None):
        total = threads or judge_threads()
        self.all = [Referee(max(1, total // max(1, count))) for _ in range(max(1, count))]
        self._free: queue.SimpleQueue[Referee] = queue.SimpleQueue()
        for referee in self.all:
            self._free.put(referee)

    def start(self) -> None:
        for referee in self.all:
            referee.start()

    def judge(self, request: dict, truths_fd: int, outputs_fd: int, timeout: float) -> dict:
        referee = self._free.get()
        try:
            return referee.judge(request, truths_fd, outputs_fd, timeout)
        finally:
            self._free.put(referee)

    def close(self) -> None:
        for referee in self.all:
            referee.close()
