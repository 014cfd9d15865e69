"""What /proc says about host processes, for the parent (plain Python)."""

from __future__ import annotations

import os


def parent_pid(pid: int | str) -> int | None:
    """The parent of `pid`, from /proc/<pid>/stat (the name in parentheses may hold spaces or
    parentheses itself, so the fields are read after the last one); None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def uid_of(pid: int | str) -> int | None:
    """The real uid of `pid`, from /proc/<pid>/status; None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
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


def sched_seconds(pids) -> tuple[float, float] | None:
    """(running, waiting for a CPU) seconds so far of every thread of `pids`, from the kernel's
    per-thread accounting (`schedstat`: time on a CPU and time runnable on a run queue, in ns);
    None where /proc cannot tell."""
    ran = waited = 0
    found = False
    for pid, tid in threads(pids):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as handle:
                fields = handle.read().split()
            ran, waited, found = ran + int(fields[0]), waited + int(fields[1]), True
        except (OSError, IndexError, ValueError):
            continue
    return (ran / 1e9, waited / 1e9) if found else None
