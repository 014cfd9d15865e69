"""What /proc says about host processes, for the parent (plain Python)."""

from __future__ import annotations

import os


def _read(path: str) -> bytes:
    """A small /proc file in one read: the evaluator scans every process's files while a sandbox
    holds the device (batchclock.readings on hosts without cgroups), so the buffered text file
    objects' overhead counts."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 8192)
    finally:
        os.close(fd)


def parent_pid(pid: int | str) -> int | None:
    """The parent of `pid`, from /proc/<pid>/stat (the name in parentheses may hold spaces or
    parentheses itself, so the fields are read after the last one); None if it is gone."""
    try:
        return int(_read(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Whether a process `pid` exists (one owned by another user counts)."""
    if not 0 < pid <= 1 << 22:  # above any pid_max: a name's digits that were never a pid
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def uid_of(pid: int | str) -> int | None:
    """The real uid of `pid`, from /proc/<pid>/status; None if it is gone."""
    try:
        status = _read(f"/proc/{pid}/status")
        return int(status[status.index(b"\nUid:") + 5:].split()[0])
    except (OSError, ValueError, IndexError):
        return None


def of_uid(uid: int) -> list[int]:
    """Host pids whose real uid is `uid`, from a scan of /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit() and uid_of(name) == uid]


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, from a scan of /proc (where no cgroup lists them)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return [pid]
    for name in names:
        parent = parent_pid(name) if name.isdigit() else None
        if parent is not None:
            children.setdefault(parent, []).append(int(name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def threads(pids):
    """(pid, tid) of every thread of `pids` that still exists."""
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            yield pid, int(task)


def pin(pids, cpus) -> None:
    """Every thread of `pids` onto `cpus` (sched_setaffinity); a thread that is gone is skipped.
    Threads started later inherit the set of the thread that starts them."""
    for _, tid in threads(pids):
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:
            pass


def _schedstat(pid, tid) -> tuple[int, int] | None:
    """(ns on a CPU, ns runnable on a run queue) of one thread so far; None where it is gone."""
    try:
        fields = _read(f"/proc/{pid}/task/{tid}/schedstat").split()
        return int(fields[0]), int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def sched_seconds(pids) -> tuple[float, float] | None:
    """(running, waiting for a CPU) seconds so far of every thread of `pids`, from the kernel's
    per-thread accounting (`schedstat`: time on a CPU and time runnable on a run queue, in ns);
    None where /proc cannot tell. Only threads alive now: a process that started and exited
    between two readings is in neither (the sandbox's cgroup keeps its CPU time: limits.py)."""
    counts = [c for c in (_schedstat(pid, tid) for pid, tid in threads(pids)) if c is not None]
    if not counts:
        return None
    return sum(c[0] for c in counts) / 1e9, sum(c[1] for c in counts) / 1e9


def task_waits(tasks) -> float:
    """Seconds the threads `tasks` ((pid, tid) pairs) have waited on a run queue for a CPU so far
    (`schedstat`), those gone skipped."""
    return sum(c[1] for c in (_schedstat(pid, tid) for pid, tid in tasks) if c is not None) / 1e9
