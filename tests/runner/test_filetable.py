"""The open-file limit of sandboxed processes against the host's file table (runner/host/filetable.py)."""

import logging
import resource

import pytest

from runner.host import filetable, limits
from runner import RunnerError


@pytest.fixture
def host_table(monkeypatch, tmp_path):
    """A file-nr of given numbers in place of the host's, and the check's result undone afterwards."""
    monkeypatch.setattr(filetable, "_cap", None)
    monkeypatch.delenv("KERNELLAB_SANDBOX_FILES", raising=False)
    monkeypatch.delenv("KERNELLAB_SANDBOX_CONCURRENT", raising=False)

    def given(in_use: int, file_max: int) -> None:
        path = tmp_path / "file-nr"
        path.write_text(f"{in_use}\t0\t{file_max}\n")
        monkeypatch.setattr(filetable, "FILE_NR", str(path))
    return given


def test_the_limit_that_fits_is_half_the_free_table_over_every_process():
    # the finding's host: 4,938 in use of 2,466,262; 16 sandboxes of 512 processes
    assert filetable.files_that_fit(files=1024, processes=512, sandboxes=16, in_use=4938, file_max=2466262) == 150
    assert filetable.files_that_fit(files=1024, processes=512, sandboxes=16, in_use=4938,
                                    file_max=2 ** 63 - 1) == 1024  # systemd's "no maximum"
    assert filetable.files_that_fit(files=1024, processes=64, sandboxes=1, in_use=10 ** 6, file_max=10 ** 6) == 0


def test_a_table_too_small_lowers_the_limit_and_says_so(host_table, caplog):
    host_table(in_use=4938, file_max=2466262)
    with caplog.at_level(logging.WARNING, logger="runner.host.filetable"):
        assert filetable.fit_to_host(processes=512, pool_sandboxes=3) == 150
    assert "lowered from 1024 to 150" in caplog.text and "fs.file-max 2,466,262" in caplog.text
    sandbox_limits = limits.Limits.from_env("cpu")
    assert sandbox_limits.files == 150
    cgroups = limits.Cgroups(sandbox_limits)
    try:
        assert (resource.RLIMIT_NOFILE, 150, 150) in limits.rlimits(sandbox_limits, "cpu", cgroups)
    finally:
        cgroups.remove()


def test_a_table_with_room_keeps_the_configured_limit(host_table, monkeypatch):
    host_table(in_use=4938, file_max=2466262)
    monkeypatch.setenv("KERNELLAB_SANDBOX_FILES", "256")
    monkeypatch.setenv("KERNELLAB_SANDBOX_CONCURRENT", "4")
    assert filetable.fit_to_host(processes=512, pool_sandboxes=3) == 256
    assert limits.Limits.from_env("cuda").files == 256


def test_a_table_without_room_for_the_floor_refuses_to_start(host_table):
    host_table(in_use=60000, file_max=200000)
    with pytest.raises(RunnerError, match=r"leaves 8 open files per process, under the 64 they need.*fs.file-max"):
        filetable.fit_to_host(processes=512, pool_sandboxes=2)

