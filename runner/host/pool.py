"""A pool of warm sandboxes (torch imported, CUDA initialised), so a candidate's
evaluation does not wait for process start-up. Each sandbox runs one job and is gone;
taking one starts its replacement at once. An evaluation takes two (the problem's, which
makes the truths, and the candidate's), and the pool's trusted judges (refereeing.py)
compare their outputs."""

from __future__ import annotations

import collections
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from ..common import compile as compiling
from . import evaluation, filetable, limits
from ..common.errors import Cancelled, RunnerError
from .refereeing import Referees
from .sandbox import Sandbox, remove_stale_folders


REFEREES = 2


class RunScope:
    """The sandboxes one caller's thread takes from the pool while a scope is open, so another
    thread can stop that caller's run: `cancel()` kills them, and any sandbox taken later is refused.
    `on_phase(name)` hears where the run stands (sandbox.PHASES): the parent's reading of messages it
    handles anyway, for a progress line only. It is called on the run's thread and must not block."""

    def __init__(self, on_phase=None):
        self.on_phase = on_phase
        self.cancelled = threading.Event()
        self._sandboxes: weakref.WeakSet[Sandbox] = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, sandbox: Sandbox) -> None:
        with self._lock:
            if not self.cancelled.is_set():
                self._sandboxes.add(sandbox)
                return
        sandbox.discard()
        raise Cancelled("the run was cancelled")

    def cancel(self) -> None:
        with self._lock:
            self.cancelled.set()
            running = list(self._sandboxes)
        for sandbox in running:
            sandbox.kill()  # its run() sees the process end and returns; the caller's thread cleans up


class Pool:
    """Warm sandboxes (torch imported, CUDA initialised), each used for one run only.
    `size` sandboxes are kept warming, at least two (what one evaluation takes); size=0 starts
    them per run."""

    def __init__(self, device: str = "cpu", size: int = 1, *, threads: int | None = None):
        if device not in ("cpu", "cuda"):
            raise RunnerError(f"device must be cpu or cuda, not {device!r}")
        self.device, self.size, self.threads = device, max(2, int(size)) if int(size) > 0 else 0, threads
        self._warm: collections.deque[Sandbox] = collections.deque()
        self._lock = threading.Lock()
        self._closed = False
        self._scopes = threading.local()
        self.environment: dict | None = None
        # Every sandbox is started from this one thread, which lives as long as the pool:
        # bubblewrap's --die-with-parent fires when the *thread* that started it exits, so a
        # sandbox started from a job's thread would be killed when that job ends.
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-starter")
        remove_stale_folders()
        limits.remove_stale_cgroups()  # what evaluators killed with SIGKILL left
        # open files per sandboxed process, sized against the host's file table (refuses if none fits)
        filetable.fit_to_host(processes=limits.Limits.from_env(device).processes, pool_sandboxes=self.size + 2)
        # the trusted judges of this pool's evaluations (referee.py); a GPU pool's evaluations finish
        # faster than one judge compares their outputs on a busy host
        self.referee = Referees(REFEREES if device == "cuda" else 1)
        if self.size:
            self.referee.start()
        for _ in range(self.size):
            self._warm.append(self._new())

    def _new(self) -> Sandbox:
        return self._starter.submit(Sandbox, self.device, self.threads).result()

    def take(self) -> Sandbox:
        with self._lock:
            if self._closed:
                raise RunnerError("the pool is closed")
            sandbox = self._warm.popleft() if self._warm else None
            if self.size:
                self._warm.append(self._new())
        sandbox = sandbox or self._new()
        scope = getattr(self._scopes, "current", None)
        if scope is not None:
            scope.add(sandbox)
        return sandbox

    def phase(self, name: str) -> None:
        """Tell this thread's scope, if it listens, that its run entered phase `name`. A listener's
        fault never reaches the run: phases inform, they decide nothing."""
        scope = getattr(self._scopes, "current", None)
        if scope is not None and scope.on_phase is not None:
            try:
                scope.on_phase(name)
            except Exception:
                pass

    @contextmanager
    def scope(self, on_phase=None):
        """Yields a RunScope for the validations and evaluations this thread runs inside it; after
        `cancel()` (from any thread) they raise Cancelled instead of returning a verdict."""
        scope = RunScope(on_phase)
        self._scopes.current = scope
        try:
            yield scope
        finally:
            self._scopes.current = None

    def _unless_cancelled(self, run) -> dict:
        scope = getattr(self._scopes, "current", None)
        try:
            result = run()
        except Exception as exc:
            if scope is not None and scope.cancelled.is_set() and not isinstance(exc, Cancelled):
                raise Cancelled(f"the run was cancelled ({type(exc).__name__} on the way out)") from exc
            raise
        if scope is not None and scope.cancelled.is_set():  # killed midway: what it returned means nothing
            raise Cancelled("the run was cancelled")
        return result

    def current_environment(self) -> dict:
        """The environment sandboxes report here (device, versions), learnt from the first
        sandbox that got warm, without using it up."""
        if self.environment is not None:
            return self.environment
        for _ in range(2):
            # Out of the pool while it is waited on: a job taking it meanwhile would share its
            # messages with this wait (and lose its verdict to it).
            with self._lock:
                sandbox = self._warm.popleft() if self._warm else self._new()
            environment = sandbox.wait_ready()
            if environment is not None:
                self.environment = evaluation.environment_of(sandbox, None)
                with self._lock:
                    if not self._closed:
                        self._warm.appendleft(sandbox)
                        sandbox = None
                if sandbox is not None:
                    sandbox.discard()
                return self.environment
            sandbox.discard()
        raise RunnerError(f"no sandbox could start on {self.device}: {compiling.last_line(sandbox.stderr[-2000:])}")

    def validate(self, problem_source: str, *, device: str | None = None, timeout: float = 300.0,
                 seed: int | None = None, more_baselines=()) -> dict:
        self._same_device(device)
        return self._unless_cancelled(lambda: evaluation.validate(self, problem_source, device=self.device,
                                                                  timeout=timeout, seed=seed,
                                                                  more_baselines=more_baselines))

    def evaluate(self, problem_source: str, kernel_source: str, *, device: str | None = None,
                 seed: int | None = None, timeout: float = 300.0, atol: float | None = None,
                 rtol: float | None = None, allow_library: bool = False, rule: str | None = None,
                 more_baselines=(), compile_only: bool = False, untimed: bool = False,
                 counters: bool = False) -> dict:
        self._same_device(device)
        return self._unless_cancelled(lambda: evaluation.evaluate(
            self, problem_source, kernel_source, device=self.device, seed=seed, timeout=timeout, atol=atol,
            rtol=rtol, allow_library=allow_library, rule=rule, more_baselines=more_baselines,
            compile_only=compile_only, untimed=untimed, counters=counters))

    def _same_device(self, device: str | None) -> None:
        if device is not None and device != self.device:
            raise RunnerError(f"this pool runs on {self.device}, not {device}")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            warm, self._warm = list(self._warm), collections.deque()
        for sandbox in warm:
            sandbox.discard()
        self.referee.close()
        self._starter.shutdown(wait=False)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
