"""A build check (the agent's `compile` tool): the candidate's sandbox builds the kernel and stops;
nothing is run, judged or timed, and the compiler's own error lines come back. An untimed check (the
`check` tool): the trusted judge decides correctness, and nothing is timed."""

from . import sources


def test_a_kernel_that_builds_is_compiled_and_nothing_is_judged(cpu_pool):
    result = cpu_pool.evaluate(sources.SOFTMAX_PROBLEM, sources.SOFTMAX_KERNEL, seed=1, compile_only=True)
    assert (result["status"], result["reason"]) == ("compiled", "it built"), result["reason"]
    assert result["correctness"] is None and result["timing"] is None and result["profile"] is None
    assert result["compile"]["seconds"] is not None


def test_a_compile_error_comes_back_with_the_compilers_error_line(cpu_pool):
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_COMPILE_ERROR, seed=1, compile_only=True)
    assert result["status"] == "compile_error"
    assert "error:" in result["reason"] and "undefined_thing" in result["reason"]
    assert "undefined_thing" in result["compile"]["log"]


def test_an_untimed_check_is_judged_by_the_trusted_judge_and_not_timed(cpu_pool):
    result = cpu_pool.evaluate(sources.LAYERNORM_PROBLEM, sources.LAYERNORM_EXACT_KERNEL, seed=2, untimed=True)
    assert result["status"] == "correct", result["reason"]
    assert [d["name"] for d in result["correctness"]["per_distribution"]] == ["get_inputs", "uniform", "offset"]
    assert result["timing"] is None and result["profile"] is None and result["paired"] is None
    assert "timing_s" not in result["phases"] and result["phases"]["judge_s"] > 0

    naive = cpu_pool.evaluate(sources.LAYERNORM_PROBLEM, sources.LAYERNORM_NAIVE_KERNEL, seed=2, untimed=True)
    assert naive["status"] == "incorrect" and "offset" in naive["reason"]
    assert naive["correctness"]["per_distribution"][2]["passed"] is False
