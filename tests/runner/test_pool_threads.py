"""Sandboxes outlive the thread that asked for them: bubblewrap's --die-with-parent follows the
starting thread, and the pipelined worker runs each job on a thread that ends with the job."""

import threading

import pytest

import runner

from . import sources


@pytest.mark.slow
def test_a_sandbox_started_for_a_thread_that_ended_still_runs():
    with runner.Pool(device="cpu", size=1) as pool:
        taken = []
        # take() starts the replacement; the thread lives on until bubblewrap has armed its death signal
        asker = threading.Thread(target=lambda: (taken.append(pool.take()), pool.current_environment()))
        asker.start()
        asker.join()
        taken[0].discard()
        result = pool.evaluate(sources.SILU_PROBLEM + "\n# threads\n", sources.SILU_KERNEL, seed=2)
    assert result["status"] == "correct", result["reason"]
