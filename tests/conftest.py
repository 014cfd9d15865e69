"""Shared test plumbing. Importable without Django, so the runner's tests also run on GPU
hosts that only have torch (run them there with `-p no:django`).

Tests that need PostgreSQL, Redis, chromium or a GPU skip with a reason on a machine
without them, except under CI (CI=true), where a missing PostgreSQL, Redis or chromium
fails the run instead: those tests must run there.

Every test runs the runner with its caches (baselines, builds) in a temporary folder, never the
checkout's var/, and without the torch.compile baseline (~20 s a problem on a CPU) unless it asks
for `compile_baseline`. Runner-using tests share one warm pool per device (`cpu_pool`, `cuda_pool`).
"""

import faulthandler
import os
import shutil
import socket
import sys
import threading

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def service_missing(what: str, how_to_fix: str) -> None:
    """Skip (locally) or fail (CI) a test whose service is not there."""
    message = f"{what} is not available: {how_to_fix}"
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.fixture(scope="session", autouse=True)
def runner_settings(tmp_path_factory):
    """Set for the whole session, before any test, so a test sees the same settings whichever ran
    before it; subprocesses (evaluators, the browser's stack) inherit them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path_factory.mktemp("runner-cache")))
        patch.setenv("KERNELLAB_BASELINE_COMPILE", "0")
        yield


@pytest.fixture
def compile_baseline(monkeypatch):
    """The torch.compile baseline on, as a deployment has it, for a test that checks it."""
    monkeypatch.setenv("KERNELLAB_BASELINE_COMPILE", "1")


@pytest.fixture(scope="session")
def cpu_pool(runner_settings):
    import runner

    with runner.Pool(device="cpu", size=1) as pool:
        yield pool


@pytest.fixture(scope="session")
def cuda_pool(runner_settings):
    import runner

    with runner.Pool(device="cuda", size=2) as pool:
        yield pool


def xdist_group(item) -> str:
    """Under `pytest -n N --dist loadgroup`, which tests one worker runs in order: the browser
    tests share one stack, the PostgreSQL and Redis tests share fixed databases, and any other
    module stays whole, so its module-scoped fixtures (pools, stacks) are built once."""
    if "e2e" in item.keywords:
        return "browser"
    if "postgres" in item.keywords or "redis" in item.keywords:
        return "services"
    return item.nodeid.split("::")[0]


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    grouped = getattr(config.option, "loadgroup", False)
    has_gpu = None
    for item in items:
        if grouped:
            item.add_marker(pytest.mark.xdist_group(xdist_group(item)))
        if "gpu" in item.keywords:
            if has_gpu is None:
                has_gpu = cuda_available()
            if not has_gpu:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (run `pytest -m gpu` on a GPU host)"))


@pytest.fixture
def require_postgres():
    if not port_open("127.0.0.1", 5432):
        service_missing("PostgreSQL at 127.0.0.1:5432", "start it (pg_ctlcluster <version> main start)")


@pytest.fixture
def empty_postgres_url(require_postgres):
    """The URL of a new, empty PostgreSQL database on the local server, dropped after the test."""
    import uuid

    import psycopg

    name = f"kernellab_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def require_redis():
    if not port_open("127.0.0.1", 6379):
        service_missing("Redis at 127.0.0.1:6379", "start it (redis-server --daemonize yes)")


@pytest.fixture
def require_chromium():
    path = chromium_path()
    if not path:
        service_missing("Chromium", "install Debian's chromium package (apt-get install chromium)")
    return path


def pytest_unconfigure(config):
    """A run still alive a minute after its summary prints every thread's stack: a thread left running
    (a call abandoned mid-wait, a pool never closed) keeps the interpreter from exiting, and CI's time with it."""
    timer = threading.Timer(60, faulthandler.dump_traceback, kwargs={"file": sys.stderr, "all_threads": True})
    timer.daemon = True
    timer.start()
