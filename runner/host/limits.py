"""Resource limits of one sandbox, and how a limit that was hit becomes a verdict.

- Memory and processes: a cgroup of its own per sandbox (v2 where its controllers are
  delegated to us, else v1 `memory` and `pids`). Without a memory cgroup, RLIMIT_AS on CPU
  sandboxes only (CUDA reserves address space of about twice the device's memory); without
  a pids cgroup, RLIMIT_NPROC, which counts per uid and so per sandbox slot.
- Disk: the sandbox's only writable folders are tmpfs mounts of a fixed size (their pages
  count as the sandbox's memory too); RLIMIT_FSIZE bounds one file.
- CPU time: RLIMIT_CPU (the wall clock is policed by the parent).
- Open files: RLIMIT_NOFILE per process, sized against the host's file table (filetable.py).
- CPU accounting, for the pairing's idle check and the CPU batch clock: a v1 `cpuacct` cgroup
  beside the others, or the v2 folder's `cpu.stat`; either keeps the time of processes that
  have exited, which a scan of live threads misses.
Each cgroup's name carries the evaluator's pid, so that the next evaluator removes the empty
ones a killed evaluator left (`remove_stale_cgroups`).
The cgroup is filled from the forked child before it execs bubblewrap, so nothing the
candidate starts is ever outside it.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path

from . import filetable
from ..common.procs import alive

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "kernellab-"  # then the evaluator's pid and a random part
MB = 1024 * 1024


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return max(1, int(value)) if value else default
    except ValueError:
        return default


@dataclass(frozen=True)
class Limits:
    memory_mb: int
    processes: int
    disk_mb: int
    cpu_s: int
    files: int = filetable.FILES_DEFAULT  # open files per process

    @classmethod
    def from_env(cls, device: str) -> "Limits":
        return cls(
            memory_mb=_env_int("KERNELLAB_SANDBOX_MEMORY_MB", 8192 if device == "cpu" else 65536),
            processes=_env_int("KERNELLAB_SANDBOX_PROCESSES", 512),
            disk_mb=_env_int("KERNELLAB_SANDBOX_DISK_MB", 2048),
            cpu_s=_env_int("KERNELLAB_SANDBOX_CPU_S", 1800),
            files=filetable.per_process(),
        )


def _own_cgroup(controller: str | None) -> Path | None:
    """This process's cgroup folder for `controller` (None: the v2 unified hierarchy)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller is None and names == "":
            folder = CGROUP_ROOT / path.lstrip("/")
            return folder if (folder / "cgroup.controllers").exists() else None
        if controller is not None and controller in names.split(","):
            folder = CGROUP_ROOT / controller / path.lstrip("/")
            return folder if folder.is_dir() else None
    return None


class Cgroups:
    """The sandbox's cgroups: created by the parent, joined by the forked child, read after
    the run to learn which limit (if any) ended it, then removed."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.memory: Path | None = None  # folder holding the memory files
        self.pids: Path | None = None
        self.cpu: Path | None = None  # folder holding the CPU accounting (cpuacct.usage or cpu.stat)
        self.version: int | None = None
        self.notes: list[str] = []
        name = f"{CGROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
        if not self._make_v1(name):
            self._make_v2(name)
        if self.cpu is None:  # v1 cpuacct also where v2 holds the rest (hybrid hosts)
            parent = _own_cgroup("cpuacct")
            folder = _mkdir(parent / name) if parent is not None else None
            if folder is not None and (folder / "cpuacct.usage").exists():
                self.cpu = folder
            elif folder is not None:
                _rmdir(folder)

    def _make_v1(self, name: str) -> bool:
        made = False
        memory_parent, pids_parent = _own_cgroup("memory"), _own_cgroup("pids")
        if memory_parent is not None:
            folder = _mkdir(memory_parent / name)
            if folder and _write(folder / "memory.limit_in_bytes", self.limits.memory_mb * MB):
                _write(folder / "memory.memsw.limit_in_bytes", self.limits.memory_mb * MB)  # no swap past it
                self.memory, made = folder, True
        if pids_parent is not None:
            folder = _mkdir(pids_parent / name)
            if folder and _write(folder / "pids.max", self.limits.processes):
                self.pids, made = folder, True
        if made:
            self.version = 1
        return made

    def _make_v2(self, name: str) -> None:
        parent = _own_cgroup(None)
        if parent is None:
            return
        available = (parent / "cgroup.subtree_control").read_text().split() if \
            (parent / "cgroup.subtree_control").exists() else []
        folder = _mkdir(parent / name)
        if folder is None:
            return
        self.version = 2
        if "memory" in available and _write(folder / "memory.max", self.limits.memory_mb * MB):
            _write(folder / "memory.swap.max", 0)
            _write(folder / "memory.oom.group", 1)
            self.memory = folder
        if "pids" in available and _write(folder / "pids.max", self.limits.processes):
            self.pids = folder
        if (folder / "cpu.stat").exists():  # usage_usec, kept by every v2 cgroup whatever its controllers
            self.cpu = folder
        if self.memory is None and self.pids is None and self.cpu is None:
            _rmdir(folder)
            self.version = None

    def folders(self) -> list[Path]:
        return list(dict.fromkeys(p for p in (self.memory, self.pids, self.cpu) if p is not None))

    def cpu_seconds(self) -> float | None:
        """CPU seconds the sandbox's processes have run so far, those that have exited included;
        None without a CPU-accounting cgroup or when it cannot be read."""
        if self.cpu is None:
            return None
        try:
            if (self.cpu / "cpuacct.usage").exists():
                return int((self.cpu / "cpuacct.usage").read_text()) / 1e9
            for line in (self.cpu / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def processes(self) -> list[int] | None:
        """The sandbox's processes, as its cgroup lists them; None where it cannot be read."""
        for folder in self.folders()[:1]:
            try:
                return [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                return None
        return None

    def join(self) -> None:
        """In the forked child, before exec: move this process into the cgroups."""
        for folder in self.folders():
            with open(folder / "cgroup.procs", "w") as out:
                out.write(str(os.getpid()))

    def settle(self) -> None:
        """Read the counters once, before the cgroups are removed; later reads use these."""
        self._settled = (self.oom_killed(), self.processes_refused())

    def oom_killed(self) -> bool:
        if getattr(self, "_settled", None):
            return self._settled[0]
        if self.memory is None:
            return False
        if self.version == 2:
            return _counter(self.memory / "memory.events", "oom_kill") > 0
        return _counter(self.memory / "memory.oom_control", "oom_kill") > 0 or \
            _counter(self.memory / "memory.oom_control", "under_oom") > 0

    def processes_refused(self) -> bool:
        if getattr(self, "_settled", None):
            return self._settled[1]
        return self.pids is not None and _counter(self.pids / "pids.events", "max") > 0

    def kill_all(self) -> None:
        for folder in self.folders():
            if self.version == 2 and _write(folder / "cgroup.kill", 1):
                continue
            try:
                pids = (folder / "cgroup.procs").read_text().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError, ValueError):
                    pass

    def remove(self) -> None:
        for folder in self.folders():
            _rmdir(folder)


def remove_stale_cgroups() -> list[str]:
    """Remove the sandbox cgroups that evaluators killed with SIGKILL left behind (they never ran
    `remove`): only those whose name carries the pid of a process that is gone, so a live
    evaluator's are left alone, and rmdir itself refuses a cgroup that still holds a process.
    Names without a pid (earlier versions) are left to the operator."""
    removed = []
    parents = [_own_cgroup(controller) for controller in ("memory", "pids", "cpuacct", None)]
    for parent in dict.fromkeys(p for p in parents if p is not None):
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            owner, _, rest = name[len(CGROUP_PREFIX):].partition("-")
            if not name.startswith(CGROUP_PREFIX) or not owner.isdigit() or not rest or alive(int(owner)):
                continue
            try:
                (parent / name).rmdir()
            except OSError:
                continue  # a process still in it, or not a cgroup folder
            removed.append(str(parent / name))
    return removed


CPU_GRACE_S = 5  # SIGXCPU at the limit, SIGKILL this much later (equal limits would skip SIGXCPU)


def rlimits(limits: Limits, device: str, cgroups: Cgroups) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) set by launch.py before exec, inherited by all it starts."""
    chosen = [(resource.RLIMIT_FSIZE, limits.disk_mb * MB, limits.disk_mb * MB),
              (resource.RLIMIT_CPU, limits.cpu_s, limits.cpu_s + CPU_GRACE_S), (resource.RLIMIT_CORE, 0, 0),
              (resource.RLIMIT_NOFILE, limits.files, limits.files)]
    if cgroups.memory is None and device == "cpu":
        chosen.append((resource.RLIMIT_AS, limits.memory_mb * MB, limits.memory_mb * MB))
    if cgroups.pids is None:
        chosen.append((resource.RLIMIT_NPROC, limits.processes, limits.processes))
    return chosen


def describe(limits: Limits, cgroups: Cgroups, device: str) -> dict:
    """What enforces each limit in this sandbox (reported with the environment)."""
    memory = f"cgroup v{cgroups.version}" if cgroups.memory else ("RLIMIT_AS" if device == "cpu" else "none")
    pids = f"cgroup v{cgroups.version}" if cgroups.pids else "RLIMIT_NPROC"
    return {"memory_mb": limits.memory_mb, "memory_by": memory, "processes": limits.processes, "processes_by": pids,
            "disk_mb": limits.disk_mb, "cpu_s": limits.cpu_s, "files": limits.files}


def explain(status: str, reason: str, code: int | None, limits: Limits, cgroups: Cgroups,
            log: str = "") -> tuple[str, str] | None:
    """A clearer verdict when a limit ended the run or made the candidate fail; None if no
    limit was involved."""
    if status == "correct":
        return None
    if cgroups.oom_killed():
        return "oom", (f"the sandbox went past its memory limit of {limits.memory_mb} MB and was killed "
                       "(host and device memory of the process, its files in /tmp and /dev/shm count)")
    signal_number = -code if code is not None and code < 0 else (code - 128 if code and code > 128 else None)
    if signal_number == signal.SIGXCPU:
        return "runtime_error", f"the sandbox used up its CPU time limit ({limits.cpu_s} s) and was stopped"
    if signal_number == signal.SIGKILL and cgroups.memory is not None:
        return "runtime_error", ("the sandbox was killed (SIGKILL) without a verdict, not by its memory limit (its "
                                 f"cgroup saw no OOM): the hard stop of its CPU time limit ({limits.cpu_s} s + "
                                 f"{CPU_GRACE_S} s) if it ignored SIGXCPU, or its own doing")
    if signal_number == signal.SIGXFSZ:
        return "runtime_error", f"a file went past the sandbox's file size limit ({limits.disk_mb} MB)"
    text = f"{reason}\n{log}"
    if cgroups.processes_refused() or (cgroups.pids is None and "Resource temporarily unavailable" in text):
        return "runtime_error", (f"the kernel went past the sandbox's process limit ({limits.processes} "
                                 f"processes and threads): {reason}")
    if "No space left on device" in text or "File too large" in text:
        return "runtime_error", f"the kernel went past the sandbox's disk limit ({limits.disk_mb} MB): {reason}"
    if _TOO_MANY_FILES.search(text):
        return "runtime_error", (f"the kernel went past the sandbox's open-file limit ({limits.files} open files "
                                 f"per process, RLIMIT_NOFILE): {reason}")
    return None


_TOO_MANY_FILES = re.compile(r"Too many open files(?! in system)")  # EMFILE; ENFILE is the host's table


def _counter(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _mkdir(path: Path) -> Path | None:
    try:
        path.mkdir()
        return path
    except OSError:
        return None


def _write(path: Path, value) -> bool:
    try:
        with open(path, "w") as out:
            out.write(str(value))
        return True
    except OSError:
        return False


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
