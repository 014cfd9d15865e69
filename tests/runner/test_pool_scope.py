"""A run can be stopped from another thread (Pool.scope): its sandboxes are killed at once, it
raises Cancelled instead of returning a verdict, and the pool goes on judging other runs."""

import threading
import time

import pytest

import runner
from runner import Cancelled

from . import sources

SPINS = sources.SILU_KERNEL + "\nwhile True:  # holds its sandbox for the whole timeout\n    pass\n"


@pytest.mark.slow
def test_a_cancelled_run_stops_at_once_and_the_pool_keeps_judging(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    with runner.Pool(device="cpu", size=1) as pool:
        pool.validate(sources.SILU_PROBLEM, timeout=300)  # the problem's truths, before the clock starts
        with pool.scope() as scope:
            threading.Timer(3, scope.cancel).start()
            began = time.monotonic()
            with pytest.raises(Cancelled):
                pool.evaluate(sources.SILU_PROBLEM, SPINS, timeout=300)
            assert time.monotonic() - began < 30  # not the 300 s timeout
            with pytest.raises(Cancelled):  # nothing more runs in a cancelled scope
                pool.take()
        result = pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=2)  # outside it, as before
    assert result["status"] == "correct", result["reason"]
