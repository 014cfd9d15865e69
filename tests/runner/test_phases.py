"""The parent reports where a run stands (runner/phases.py) from messages it handles anyway: to a
scope's listener, once per phase and in order; a listener's fault never reaches the run."""

import pytest

import runner
from runner.host.phases import Reporter

from . import sources


def test_each_phase_is_said_once_in_the_order_seen():
    heard = []
    report = Reporter("evaluate", heard.append)
    for step in ("sent", "device", "go", "timing", "timing", "go", "unknown"):
        report(step)
    assert heard == ["compiling", "waiting_for_device", "checking", "timing"]


def test_without_a_listener_or_for_other_jobs_nothing_is_said():
    Reporter("evaluate", None)("sent")  # no listener: no call, no error
    heard = []
    Reporter("truths", heard.append)("sent")
    assert heard == []


@pytest.mark.slow
def test_a_scope_hears_the_phases_of_its_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    heard = []

    def listener(name):
        heard.append(name)
        raise RuntimeError("a broken listener")  # must not change the verdict

    with runner.Pool(device="cpu", size=1) as pool:
        with pool.scope(on_phase=listener):
            validation = pool.validate(sources.SILU_PROBLEM, timeout=300)
            assert heard == ["running_reference", "waiting_for_device", "timing"]
            heard.clear()
            result = pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=2)
    assert validation["status"] == "ok", validation["reason"]
    assert result["status"] == "correct", result["reason"]
    assert heard == ["compiling", "waiting_for_device", "checking", "timing", "judging"]
