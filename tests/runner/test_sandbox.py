"""The parent's reader of a sandbox's verdict channel (runner/host/sandbox.py, schema.message): a line
nested deeper or longer than any message the runner sends is refused unread and ends the run at
once as `rejected`, where json's decoder would have killed the reader and left the run waiting
out its whole limit for a verdict nobody read."""

import json
from pathlib import Path

import pytest

from runner.host import schema

from . import sources

ATTACKS = Path(__file__).with_name("attacks")
LIMIT_S = 120  # what a run whose reader died would wait


@pytest.mark.slow
@pytest.mark.parametrize("line, why", [('b"[" * 100_000 + b"\\n"', "nested deeper than 32 levels"),
                                       ('b"[" + b"0," * (3 * 1024 * 1024) + b"0]\\n"', "longer than 4 MB")])
def test_a_line_past_the_bounds_is_rejected_at_once_and_the_next_run_is_judged(cpu_pool, line, why):
    problem = (ATTACKS / "forge_line.py").read_text().replace("{LINE}", line)
    result = cpu_pool.evaluate(problem, sources.SILU_KERNEL, seed=3, timeout=LIMIT_S)
    assert result["status"] == "rejected", result["reason"]
    assert "malformed message" in result["reason"] and why in result["reason"], result["reason"]
    assert result["phases"]["sandbox_s"] < LIMIT_S / 2  # ended on the line, not on the limit
    honest = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=4)
    assert honest["status"] == "correct", honest["reason"]


def test_a_message_is_refused_by_depth_outside_strings_and_by_length():
    assert schema.message(b'{"kind": "beat", "log": "' + b"[" * 5000 + b'"}\n', 1024 * 1024) == \
        {"kind": "beat", "log": "[" * 5000}  # brackets in a string are text
    assert schema.message(b"[" * 32 + b"]" * 32, 1024) == json.loads("[" * 32 + "]" * 32)  # the deepest allowed
    for line in (b"[" * 33 + b"]" * 33, b'{"a":' * 40 + b"1" + b"}" * 40, b"[" * 1_000_000):
        refused = schema.message(line, 4 * 1024 * 1024)
        assert isinstance(refused, schema.Refused) and "deeper than 32" in refused["why"]
    assert "longer than 1 MB" in schema.message(b"0" * (1024 * 1024 + 1), 1024 * 1024)["why"]
    assert schema.message(b"not json\n", 1024) is None
    assert schema.message(b'"\\' * 500_000, 4 * 1024 * 1024) is None  # an unterminated string: linear, noise


def test_a_sandbox_that_cannot_start_is_the_hosts_failure_never_a_verdict(monkeypatch, runner_settings):
    """Too little memory to import torch: nothing of the problem or the kernel ran, so neither is blamed; the
    error names the cause, for the worker to log and run the job again."""
    import runner

    with runner.Pool(device="cpu", size=0) as pool:
        assert pool.validate(sources.SILU_PROBLEM)["status"] == "ok"
        monkeypatch.setenv("KERNELLAB_SANDBOX_MEMORY_MB", "100")
        with pytest.raises(runner.RunnerError, match="a sandbox could not start, so nothing was run: .*memory limit"):
            pool.validate(sources.SILU_PROBLEM)
        with pytest.raises(runner.RunnerError, match="a sandbox could not start, so nothing was run: .*memory limit"):
            pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=5)
