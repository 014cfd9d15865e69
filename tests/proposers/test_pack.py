"""The context pack's choices: facts rendered tolerant of missing or odd keys, the bank within its
token budget, the runner's error rows as a table."""

from proposers import pack
from proposers.base import KernelContext


def test_facts_skip_missing_and_malformed_keys_and_never_guess():
    lines = pack.target_lines("cuda", {"name": "NVIDIA H200", "sm_count": 132, "l2_bytes": "lots",
                                       "shared_mem_per_sm": None, "tflops": {"bf16": 677, "fp8": "?"}})
    assert lines == ["- device: NVIDIA H200", "- streaming multiprocessors: 132", "- L2 cache: lots",
                     "- measured matrix rates: bf16 677 TFLOP/s"]
    assert pack.target_lines("cuda", None) == [] and pack.target_lines("cpu", {"sm_count": 132}) == []
    cpu = pack.target_lines("cpu", {"cores": 2, "caches": {"L2": "1 MiB"}, "flags": ["avx2"], "vector_width_bits": 256})
    assert cpu == ["- cores: 2", "- widest vector registers: 256 bits", "- caches: L2 1 MiB",
                   "- vector instruction sets: avx2"]


def test_the_bank_keeps_the_fastest_that_fit_the_budget():
    kernels = [KernelContext(id=i, source="x" * size, status="correct") for i, size in enumerate((4000, 4000, 40))]
    assert [k.id for k in pack.fit_bank(kernels, budget_tokens=1500)] == [0]
    assert [k.id for k in pack.fit_bank(kernels, budget_tokens=3000)] == [0, 1, 2]
    huge = [KernelContext(id=9, source="x" * 100_000, status="correct")]
    assert [k.id for k in pack.fit_bank(huge, budget_tokens=10)] == [9]  # the best is always shown


def test_error_rows_become_a_table():
    rows = [{"name": "get_inputs", "passed": True, "err": 0.5, "skipped": False},
            {"name": "offset", "passed": False, "err": float("inf"), "max_abs_err": 3.0, "skipped": False},
            {"name": "uniform", "skipped": True, "skip_reason": "truth not finite"}, "junk"]
    assert pack.error_table(rows) == ("get_inputs: passed (err 0.5)\noffset: FAILED (err inf, max abs error 3)\n"
                                      "uniform: skipped (truth not finite)")


def test_a_cpu_speedup_names_the_eager_time_it_was_measured_against():
    """On the CPU the ratio comes from eager blocks timed beside the kernel, not the validation's eager
    time shown with the problem: both numbers go together, so the model never reads a contradiction."""
    kernel = KernelContext(id=1, source="", status="correct", median_ms=3.178, speedup_vs_eager=0.08,
                           paired_eager_ms=0.2542)
    assert pack.verdict_summary(kernel) == "correct, median 3.178 ms, 0.08x vs eager (eager 0.2542 ms, timed beside it)"
    kernel.paired_eager_ms = None
    assert pack.verdict_summary(kernel) == "correct, median 3.178 ms, 0.08x vs eager"
