"""Fixtures for the runner's tests: a private baseline cache, the torch.compile baseline
off (it costs ~20 s per problem on a CPU; one test turns it on), and warm pools.
Importable without Django (the GPU host runs these with `-p no:django`)."""

import os

import pytest

import runner


@pytest.fixture(scope="session", autouse=True)
def runner_settings(tmp_path_factory):
    saved = {k: os.environ.get(k) for k in ("KERNELLAB_CACHE_DIR", "KERNELLAB_BASELINE_COMPILE")}
    os.environ["KERNELLAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("runner-cache"))
    os.environ["KERNELLAB_BASELINE_COMPILE"] = "0"
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def cpu_pool(runner_settings):
    with runner.Pool(device="cpu", size=1) as pool:
        yield pool


@pytest.fixture(scope="session")
def cuda_pool(runner_settings):
    with runner.Pool(device="cuda", size=2) as pool:
        yield pool
