"""The host's file table against the sandboxes' open files.

Every open file of every process on the host takes an entry of one table of `fs.file-max`
entries; past it, unprivileged processes (the database, Redis, other sandboxes) cannot open
anything. Linux counts open files per process only (RLIMIT_NOFILE), not per cgroup, so what one
sandbox can hold is its processes times that limit. At its start the pool checks that the
sandboxes the host runs at once fit in half of what the table has free (the other half stays
the host's), lowers the per-process limit where they do not, and refuses to start where even
FLOOR files per process would not fit; both say so with the numbers.
"""

from __future__ import annotations

import logging
import os

from ..common.errors import RunnerError

FILES_DEFAULT = 1024  # per process: the usual soft limit
FLOOR = 64  # measured: a CPU torch import holds under 12 files at once, a load_inline build runs under 64
SANDBOXES_DEFAULT = 16  # sandboxes running at once on the host, all evaluators together
FILE_NR = "/proc/sys/fs/file-nr"

log = logging.getLogger(__name__)
_cap: int | None = None  # the per-process limit the last check allowed (None: not checked)


def _setting(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    try:
        return max(1, int(value)) if value else default
    except ValueError:
        return default


def per_process() -> int:
    """The open-file limit of each sandboxed process: KERNELLAB_SANDBOX_FILES, lowered to what the
    host's table allows where the pool's check found it too large."""
    wanted = _setting("KERNELLAB_SANDBOX_FILES", FILES_DEFAULT)
    return min(wanted, _cap) if _cap is not None else wanted


def table() -> tuple[int, int] | None:
    """(entries in use, fs.file-max) of the host; None where /proc does not say."""
    try:
        with open(FILE_NR) as numbers:
            in_use, _, file_max = (int(n) for n in numbers.read().split()[:3])
    except (OSError, ValueError):
        return None
    return in_use, file_max


def files_that_fit(*, files: int, processes: int, sandboxes: int, in_use: int, file_max: int) -> int:
    """The largest per-process limit, at most `files`, with which `sandboxes` sandboxes of
    `processes` processes each hold no more than half of the table's free entries."""
    budget = max(0, file_max - in_use) // 2
    return min(files, budget // (processes * sandboxes))


def fit_to_host(*, processes: int, pool_sandboxes: int) -> int:
    """Check the per-process limit against the host's table (KERNELLAB_SANDBOX_CONCURRENT
    sandboxes at once, at least this pool's own); lower it or refuse. Returns the limit now in force."""
    global _cap
    _cap = None
    wanted = per_process()
    numbers = table()
    if numbers is None:
        return wanted
    in_use, file_max = numbers
    sandboxes = max(_setting("KERNELLAB_SANDBOX_CONCURRENT", SANDBOXES_DEFAULT), pool_sandboxes)
    fit = files_that_fit(files=wanted, processes=processes, sandboxes=sandboxes, in_use=in_use, file_max=file_max)
    sizes = (f"{sandboxes} sandboxes × {processes} processes against fs.file-max {file_max:,} "
             f"with {in_use:,} in use (half of the free entries stay the host's)")
    if fit < FLOOR:
        raise RunnerError(f"the host's file table is too small for the sandboxes: {sizes} leaves {fit} open files "
                          f"per process, under the {FLOOR} they need. Raise fs.file-max (sysctl), or lower "
                          f"KERNELLAB_SANDBOX_CONCURRENT or KERNELLAB_SANDBOX_PROCESSES.")
    if fit < wanted:
        log.warning("sandbox open files lowered from %d to %d per process to fit the host's file table: %s",
                    wanted, fit, sizes)
        _cap = fit
    return fit
