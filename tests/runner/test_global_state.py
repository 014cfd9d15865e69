"""torch's global settings are judged by the value a kernel leaves (runner/inside/globalstate.py), not by the
line that sets them: published kernels assign `torch.backends.cudnn.deterministic = False` (its
default) and must not be refused for it; one that moves a setting the reference is measured under is
refused at run time, naming it."""

import pytest

from runner.inside import globalstate
from runner.host.checks import check_source

from . import sources

SETS = sources.SILU_KERNEL.replace("class ModelNew(nn.Module):", "SETTING\n\n\nclass ModelNew(nn.Module):", 1)


def with_setting(line: str) -> str:
    return SETS.replace("SETTING", line)


@pytest.mark.parametrize("line", [
    "torch.backends.cudnn.deterministic = False",
    "torch.backends.cudnn.enabled = True",
    "torch.backends.mkldnn.enabled = False",
    "torch.backends.cuda.enable_flash_sdp(True)",
])
def test_a_backend_setting_assigned_a_value_is_left_to_the_run(line):
    assert check_source(with_setting(line), reference_source=sources.SILU_PROBLEM) == []


@pytest.mark.parametrize("line, words", [
    ("torch.backends.cudnn.enabled = FLAG", "monkey-patching"),  # not a value the run can read back
    ("torch.use_deterministic_algorithms(True)", "changes global state"),
    ("torch.backends.cudnn.set_flags(False)", "changes global state"),
])
def test_other_changes_to_global_state_stay_refused(line, words):
    found = check_source(with_setting("FLAG = False\n" + line), reference_source=sources.SILU_PROBLEM)
    assert any(words in r for r in found), found


def test_a_setting_moved_is_named_with_both_values():
    before = globalstate.watched()
    assert globalstate.changed(before) is None
    import torch

    enabled = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = not enabled
    try:
        why = globalstate.changed(before)
    finally:
        torch.backends.mkldnn.enabled = enabled
    assert f"torch.backends.mkldnn.enabled from {enabled} to {not enabled}" in why


@pytest.mark.slow
def test_a_default_value_passes_and_a_moved_setting_is_refused_at_run_time(cpu_pool):
    kept = cpu_pool.evaluate(sources.SILU_PROBLEM, with_setting("torch.backends.cudnn.deterministic = False"), seed=3)
    assert kept["status"] == "correct", kept["reason"]
    moved = cpu_pool.evaluate(sources.SILU_PROBLEM, with_setting("torch.backends.mkldnn.enabled = False"), seed=3)
    assert moved["status"] == "rejected", moved["reason"]
    assert "changed torch.backends.mkldnn.enabled from True to False" in moved["reason"]
