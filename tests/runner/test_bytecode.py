"""The parent writes bytecode for the library modules a sandbox imports, where their folder takes it,
and names those it cannot: a sandbox may not write bytecode, so it would compile them at every start."""

import importlib.util
import logging
import os

import pytest

from runner.host import bytecode


def library(root, name: str) -> list:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("from . import part\n")
    (package / "part.py").write_text("VALUE = 7\n")
    return [package / "__init__.py", package / "part.py"]


def has_bytecode(source) -> bool:
    return os.path.exists(importlib.util.cache_from_source(str(source)))


@pytest.fixture
def site(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # as the sandbox's parent may have it
    bytecode._reports.clear()
    yield folder
    bytecode._reports.clear()


def test_a_library_without_bytecode_gets_it_once(site):
    sources = library(site, "kl_no_bytecode")
    assert not any(has_bytecode(s) for s in sources)

    report = bytecode.libraries("cpu", site.parent / "cache", ("kl_no_bytecode",))

    assert report["written"] == 2 and report["unwritable"] == []
    assert all(has_bytecode(s) for s in sources)
    # the stamp answers the next process: the step does not run again for this Python, torch and cache
    for source in sources:
        os.remove(importlib.util.cache_from_source(str(source)))
    bytecode._reports.clear()
    assert bytecode.libraries("cpu", site.parent / "cache", ("kl_no_bytecode",))["written"] == 2
    assert not any(has_bytecode(s) for s in sources)


def test_a_folder_that_cannot_take_bytecode_is_named(site, caplog):
    sources = library(site, "kl_read_only")
    (site / "kl_read_only" / "__pycache__").write_text("")  # a file where the folder would go: no write succeeds

    with caplog.at_level(logging.WARNING, logger="runner.host.bytecode"):
        report = bytecode.libraries("cpu", site.parent / "cache", ("kl_read_only",))

    assert sorted(report["unwritable"]) == sorted(str(s) for s in sources)
    assert "2 library modules a cpu sandbox imports have no bytecode" in caplog.text
    assert str(site / "kl_read_only") in caplog.text


def test_the_step_can_be_turned_off(site, monkeypatch):
    sources = library(site, "kl_left_alone")
    monkeypatch.setenv("KERNELLAB_LIBRARY_BYTECODE", "0")

    assert bytecode.libraries("cpu", site.parent / "cache", ("kl_left_alone",)) is None
    assert not any(has_bytecode(s) for s in sources)
