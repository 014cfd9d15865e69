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


@pytest.mark.slow
def test_a_fallback_that_ran_is_named_and_the_kernel_judged(cpu_pool):
    assert FALLS_BACK != sources.SILU_KERNEL
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, FALLS_BACK, seed=5, allow_library=True)
    assert result["status"] == "correct", result["reason"]
    # the "offset" inputs (mean 1000) take the fallback; the others run the C kernel
    assert result["fallback"].startswith("fell back to PyTorch on untimed call ") and "silu" in result["fallback"]

    honest = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=5, allow_library=True)
    assert honest["status"] == "correct" and honest["fallback"] is None


@pytest.mark.slow
def test_without_library_calls_a_fallback_that_ran_fails_the_kernel(cpu_pool):
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, FALLS_BACK, seed=5)
    assert result["status"] == "rejected" and result["reason_code"] in ("partial_replacement", "no_kernel_of_its_own")
