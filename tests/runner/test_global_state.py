"""torch's global settings are judged by the value a kernel leaves (runner/inside/globalstate.py), not by the
line that sets them: published kernels assign `torch.backends.cudnn.deterministic = False` (its
default) and must not be refused for it; one that moves a setting the reference is measured under is
refused at run time, naming it."""

import pytest

from runner.common import verify
from runner.inside import globalstate
from runner.host.checks import check_findings, check_source, declared_internals, deferred_internals

from . import sources

SETS = sources.SILU_KERNEL.replace("class ModelNew(nn.Module):", "SETTING\n\n\nclass ModelNew(nn.Module):", 1)


def with_setting(line: str) -> str:
    return SETS.replace("SETTING", line)


@pytest.mark.parametrize("line", [
    "torch.backends.cudnn.deterministic = False",
    "torch.backends.cudnn.enabled = True",
    "torch.backends.mkldnn.enabled = False",
    "torch.backends.cuda.enable_flash_sdp(True)",
    "FLAG = True\ntorch.backends.cudnn.enabled = FLAG",  # a value the run reads back
])
def test_a_backend_setting_assigned_a_value_is_left_to_the_run(line):
    assert check_source(with_setting(line), reference_source=sources.SILU_PROBLEM) == []


@pytest.mark.parametrize("line, words", [
    ("torch.backends.cudnn.is_available = lambda: FLAG", "monkey-patching"),  # code in the source
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


# --- what a kernel leaves under torch.backends: judged by the object, not by the source's line ---------------

# A cheat: the SDP setting moved (a setter the checks allow), and the function the runner reads it back with
# replaced by one, held in a variable, that reports the runner's value.
HIDES_A_SETTING = """
_KEPT = torch.backends.cuda.flash_sdp_enabled()
_report = (lambda: _KEPT)
torch.backends.cuda.enable_flash_sdp(not _KEPT)
torch.backends.cuda.flash_sdp_enabled = _report"""
# Its honest look-alike (published: level1_56): a setting torch lacks set, then the saved value restored.
RESTORES = """
_saved = {}
if hasattr(torch.backends.cudnn, 'workspace_limit'):
    _saved['workspace_limit'] = torch.backends.cudnn.workspace_limit
torch.backends.cudnn.workspace_limit = 768 * 1024 * 1024
for _key, _value in _saved.items():
    torch.backends.cudnn.workspace_limit = _value
_available = torch.backends.cudnn.is_available
torch.backends.cudnn.is_available = _available"""


def test_both_pass_the_static_checks_and_the_run_decides():
    for extra in (HIDES_A_SETTING, RESTORES):
        assert check_source(with_setting(extra), reference_source=sources.SILU_PROBLEM) == []


@pytest.fixture
def backends():
    """torch.backends as the test found it, put back afterwards (what the tests below assign)."""
    import torch

    cuda, cudnn = vars(torch.backends.cuda), vars(torch.backends.cudnn)
    kept = dict(cuda), dict(cudnn), torch.backends.cuda.flash_sdp_enabled()
    yield torch
    for space, was in ((cuda, kept[0]), (cudnn, kept[1])):
        for key in set(space) - set(was):
            del space[key]
        space.update(was)
    torch.backends.cuda.enable_flash_sdp(kept[2])


def test_a_function_left_in_place_of_torchs_is_refused_before_the_setting_is_read(backends):
    before = globalstate.watched()
    exec(HIDES_A_SETTING, {"torch": backends})
    why = globalstate.changed(before)
    assert why and "torch.backends.cuda.flash_sdp_enabled holding a function where torch had a function" in why


@pytest.mark.parametrize("extra, words", [
    ("torch.backends.cudnn.is_available = print", "cudnn.is_available holding a builtin_function_or_method"),
    ("torch.backends.cudnn.workspace_limit = object()", "cudnn.workspace_limit holding an object"),
    ("torch.backends.cudnn.m.CudnnModule.enabled = True", "CudnnModule.enabled holding a bool where torch had a"),
    ("del torch.backends.cuda.math_sdp_enabled", "deleted torch.backends.cuda.math_sdp_enabled"),
    ("torch.backends.cuda.math_sdp_enabled = torch.backends.cuda.flash_sdp_enabled", "math_sdp_enabled holding"),
    ("torch.backends.cudnn.is_available = torch.backends.mkldnn.is_available", "cudnn.is_available holding"),
])
def test_other_objects_left_under_torch_backends_are_refused(backends, extra, words):
    before = globalstate.watched()
    cudnn_class = type(backends.backends.cudnn)
    enabled = vars(cudnn_class).get("enabled")
    try:
        exec(extra, {"torch": backends})
        why = globalstate.changed(before)
    finally:
        if enabled is not None:
            type.__setattr__(cudnn_class, "enabled", enabled)
    assert why and words in why, why


def test_a_saved_value_restored_and_plain_values_pass(backends):
    before = globalstate.watched()
    exec(RESTORES, {"torch": backends})
    import torch.backends.opt_einsum  # noqa: F401  a submodule imported since: torch's own
    assert globalstate.changed(before) is None


@pytest.mark.slow
def test_the_cheat_is_refused_and_the_restoring_kernel_passes_at_run_time(cpu_pool):
    cheat = cpu_pool.evaluate(sources.SILU_PROBLEM, with_setting(HIDES_A_SETTING), seed=3)
    assert cheat["status"] == "rejected", cheat["reason"]
    assert "torch.backends.cuda.flash_sdp_enabled holding a function" in cheat["reason"]
    honest = cpu_pool.evaluate(sources.SILU_PROBLEM, with_setting(RESTORES), seed=3)
    assert honest["status"] == "correct", honest["reason"]


@pytest.mark.slow
def test_a_default_value_passes_and_a_moved_setting_is_refused_at_run_time(cpu_pool):
    kept = cpu_pool.evaluate(sources.SILU_PROBLEM, with_setting("torch.backends.cudnn.deterministic = False"), seed=3)
    assert kept["status"] == "correct", kept["reason"]
    moved = cpu_pool.evaluate(sources.SILU_PROBLEM, with_setting("torch.backends.mkldnn.enabled = False"), seed=3)
    assert moved["status"] == "rejected", moved["reason"]
    assert "changed torch.backends.mkldnn.enabled from True to False" in moved["reason"]


# --- a torch._C name PyTorch's stubs never mention: the run decides whether this PyTorch has it ---------------

GUESSED = "try:\n    _compile = torch._C._jit_cuda_compile\nexcept AttributeError:\n    _compile = None"


def present_undeclared() -> str:
    """A torch._C name this PyTorch has that its stubs never mention (there are some: internals' classes)."""
    import torch

    return next(n for n in sorted(dir(torch._C)) if n.startswith("_") and not n.startswith("__")
                and n not in declared_internals())


def test_the_sandbox_refuses_an_undeclared_internal_this_pytorch_has_before_the_kernel_runs():
    name = present_undeclared()
    source = with_setting(f"_internal = torch._C.{name}")
    assert [f for f in check_findings(source, reference_source=sources.SILU_PROBLEM) if not f.advisory] == []
    assert deferred_internals(source) == [name]
    with pytest.raises(verify.Rejected, match=f"uses torch._C.{name}, PyTorch internals"):
        globalstate.vetted({"kernel_source": source, "internals": [name]})
    guessed = with_setting(GUESSED)
    assert globalstate.vetted({"kernel_source": guessed, "internals": deferred_internals(guessed)}) == guessed


@pytest.mark.slow
def test_an_absent_internal_falls_back_and_a_present_one_is_refused_at_run_time(cpu_pool):
    guessed = cpu_pool.evaluate(sources.SILU_PROBLEM, with_setting(GUESSED), seed=3)
    assert guessed["status"] == "correct", guessed["reason"]
    assert any("_jit_cuda_compile" in a["reason"] for a in guessed["advisories"])
    name = present_undeclared()
    present = cpu_pool.evaluate(sources.SILU_PROBLEM, with_setting(f"_internal = torch._C.{name}"), seed=3)
    assert present["status"] == "rejected", present["reason"]
    assert f"uses torch._C.{name}, PyTorch internals" in present["reason"]
