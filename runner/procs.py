"""What /proc says about host processes, for the parent (plain Python)."""

from __future__ import annotations


def parent_pid(pid: int | str) -> int | None:
    """The parent of `pid`, from /proc/<pid>/stat (the name in parentheses may hold spaces or
    parentheses itself, so the fields are read after the last one); None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
