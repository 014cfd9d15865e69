"""A kernel that falls back to PyTorch when its own kernel fails: allowed with library calls (the
fallback is one), judged and timed as what it is, with the call it fell back on named."""

import pytest

from . import sources

# The C SiLU, refusing inputs it was not written for; forward then computes with PyTorch.
FALLS_BACK = sources.SILU_KERNEL.replace('''        x = x.contiguous()''', '''        try:
            if float(x.abs().max()) > 100.0:
                raise ValueError("inputs past the kernel's range")
        except ValueError:
            return torch.nn.functional.silu(x)
        x = x.contiguous()''', 1)

# Without library calls: the check itself does no PyTorch compute; the problem's rows (2048) take the fallback.
WIDTH_FALLBACK = sources.SILU_KERNEL.replace('''        x = x.contiguous()''', '''        try:
            if x.shape[-1] > WIDTH:
                raise ValueError("rows wider than the kernel's tile")
        except ValueError:
            return torch.nn.functional.silu(x)
        x = x.contiguous()''', 1)


@pytest.mark.slow
def test_a_fallback_that_ran_is_named_and_the_kernel_judged(cpu_pool):
    assert FALLS_BACK != sources.SILU_KERNEL
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, FALLS_BACK, seed=5, allow_library=True)
    assert result["status"] == "correct", result["reason"]
    # the "offset" inputs (mean 1000) take the fallback; the others run the C kernel
    assert result["fallback"].startswith("fell back to PyTorch on untimed call ") and "silu" in result["fallback"]
    # the exception it swallowed, where the kernel's own code raised it
    assert "after it caught line " in result["fallback"], result["fallback"]
    assert "ValueError: inputs past the kernel's range" in result["fallback"], result["fallback"]
    assert result["advisories"] == []  # with library calls a fallback is one: nothing to advise

    honest = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=5, allow_library=True)
    assert honest["status"] == "correct" and honest["fallback"] is None


@pytest.mark.slow
def test_without_library_calls_a_fallback_that_ran_fails_the_kernel(cpu_pool):
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, WIDTH_FALLBACK.replace("WIDTH", "1024"), seed=5)
    assert result["status"] == "rejected" and result["reason_code"] in ("partial_replacement", "no_kernel_of_its_own")
    # decided by the run (the call that fell back computed with PyTorch), naming what it caught; the static
    # finding is said beside the verdict
    assert "untimed call" in result["reason"] and "ValueError: rows wider than the kernel's tile" in result["reason"]
    assert [a["code"] for a in result["advisories"]] == ["partial_replacement"]
    assert "the except block falls back to PyTorch" in result["advisories"][0]["reason"]


@pytest.mark.slow
def test_without_library_calls_a_fallback_that_never_runs_is_judged_on_what_it_did(cpu_pool):
    never = WIDTH_FALLBACK.replace("WIDTH", "1 << 30")
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, never, seed=5)
    assert result["status"] == "correct", result["reason"]
    assert result["fallback"] is None and [a["code"] for a in result["advisories"]] == ["partial_replacement"]
