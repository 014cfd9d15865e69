"""End to end on the CPU: real sandboxes, the real system compiler, real timing."""

import pytest

import runner
from runner.host import isolation
from runner import RunnerError

from . import sources


def test_validate_reports_the_problem(cpu_pool):
    result = cpu_pool.validate(sources.SOFTMAX_PROBLEM, seed=0)
    assert result["status"] == "ok", result["reason"]
    assert result["outputs"] == [{"shape": [64, 1024], "dtype": "float32"}]
    assert result["family"] == "softmax"
    assert result["min_bytes"] == 2 * 64 * 1024 * 4
    assert result["baseline"]["eager_ms"] > 0
    assert result["environment"]["torch"] and result["environment"]["python"]


def test_invalid_problem_says_why(cpu_pool):
    result = cpu_pool.validate("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    assert result["status"] == "invalid"
    assert "get_inputs" in result["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("problem,kernel", [
    (sources.SILU_PROBLEM, sources.SILU_KERNEL),
    (sources.SOFTMAX_PROBLEM, sources.SOFTMAX_KERNEL),
])
def test_honest_c_kernels_are_accepted(cpu_pool, problem, kernel):
    result = cpu_pool.evaluate(problem, kernel, seed=1)
    assert result["status"] == "correct", result["reason"]
    assert result["correctness"]["passed"]
    assert [d["name"] for d in result["correctness"]["per_distribution"]] == ["get_inputs", "uniform", "offset"]
    assert result["timing"]["median_ms"] > 0 and result["timing"]["n"] >= 10
    assert result["speedup_vs_eager"] > 0
    assert result["precision"] == "fp32"
    assert result["compile"]["seconds"] < 5
    assert result["quarantined"] is False
    assert result["phases"]["truths_s"] > 0 and result["phases"]["truths_wait_s"] >= 0  # the truths' sandbox
    assert result["phases"]["warm_up_s"] > 0  # the candidate's sandbox, from its start to ready
    profile = result["profile"]  # no host ceilings: the rates alone, and why there are no counters
    assert profile["bandwidth_gbs"] > 0 and profile["bandwidth_fraction"] is None and profile["kernels"] is None
    assert "perf_event_open" in profile["counters"]


@pytest.mark.slow
def test_exact_layernorm_passes_where_the_naive_one_fails(cpu_pool):
    exact = cpu_pool.evaluate(sources.LAYERNORM_PROBLEM, sources.LAYERNORM_EXACT_KERNEL, seed=2)
    assert exact["status"] == "correct", exact["reason"]
    offset = exact["correctness"]["per_distribution"][2]
    assert offset["name"] == "offset" and offset["passed"] and not offset["skipped"]

    naive = cpu_pool.evaluate(sources.LAYERNORM_PROBLEM, sources.LAYERNORM_NAIVE_KERNEL, seed=2)
    assert naive["status"] == "incorrect"
    rows = {r["name"]: r for r in naive["correctness"]["per_distribution"]}
    assert rows["get_inputs"]["passed"]  # fine on standard normal inputs...
    assert rows["offset"]["passed"] is False  # ...and wrong at mean 1000, std 0.1
    assert "offset" in naive["reason"]
    assert naive["timing"] is None


@pytest.mark.slow
def test_forward_that_computes_with_torch_is_rejected_unless_library_calls_are_allowed(cpu_pool):
    rejected = cpu_pool.evaluate(sources.SOFTMAX_PROBLEM, sources.SOFTMAX_BY_TORCH, seed=3)
    assert rejected["status"] == "rejected"
    allowed = cpu_pool.evaluate(sources.SOFTMAX_PROBLEM, sources.SOFTMAX_BY_TORCH, seed=3, allow_library=True)
    assert allowed["status"] == "correct", allowed["reason"]


@pytest.mark.slow
def test_stale_memory_is_poisoned(cpu_pool):
    # Allocates the output and hopes the reference's answer is still in it (library calls
    # allowed, so only the poisoning stands in the way).
    lazy = sources.SOFTMAX_BY_TORCH.replace("return torch.softmax(x, dim=1)", "return torch.empty_like(x)")
    result = cpu_pool.evaluate(sources.SOFTMAX_PROBLEM, lazy, seed=4, allow_library=True)
    assert result["status"] == "incorrect"


@pytest.mark.slow
def test_compile_error_comes_back_as_the_compilers_message(cpu_pool):
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_COMPILE_ERROR, seed=5)
    assert result["status"] == "compile_error"
    assert "undefined_thing" in result["compile"]["log"]
    assert "error" in result["compile"]["log"]
    assert len(result["compile"]["log"]) <= 4100
    # the reason quotes the compiler's error line, not its log's first line ("In function 'silu':")
    assert "error:" in result["reason"] and "undefined_thing" in result["reason"], result["reason"]


@pytest.mark.slow
def test_the_next_candidate_after_a_crash_is_judged_right(cpu_pool):
    crashing = sources.SILU_KERNEL.replace("LIB.silu(x.data_ptr()", "LIB.silu(0")
    crashed = cpu_pool.evaluate(sources.SILU_PROBLEM, crashing, seed=6)
    assert crashed["status"] == "crashed"
    assert "SIGSEGV" in crashed["reason"]
    after = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_KERNEL, seed=6)
    assert after["status"] == "correct", after["reason"]


@pytest.mark.slow
def test_timeout_kills_the_candidate(cpu_pool):
    looping = sources.SILU_KERNEL.replace("        x = x.contiguous()", "        while True:\n            pass")
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, looping, seed=7, timeout=6)
    assert result["status"] in ("timeout", "rejected")  # the static checks may refuse it first
    if result["status"] == "timeout":
        assert "limit" in result["reason"]


@pytest.mark.slow
def test_sandbox_sees_no_secrets(monkeypatch):
    secret = "sk-ant-test-0123456789-do-not-leak"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("DATABASE_URL", "postgres://kl:" + secret + "@db/kl")
    # The problem module is untrusted code too: it looks for the secret everywhere it can.
    probing = sources.SILU_PROBLEM.replace("def get_init_inputs():", '''def _leaks():
    import glob, os
    found = [k for k, v in os.environ.items() if "do-not-leak" in v]
    for path in glob.glob("/proc/*/environ"):
        try:
            if b"do-not-leak" in open(path, "rb").read():
                found.append(path)
        except OSError:
            pass
    return found

def get_init_inputs():
    leaks = _leaks()
    if leaks:
        raise RuntimeError("secret visible: " + ", ".join(leaks))''')
    # Found anywhere, the secret fails the test.
    result = runner.validate(probing, device="cpu")
    assert result["status"] == "ok", result["reason"]


def test_plain_processes_refuse_a_parent_holding_secrets(monkeypatch):
    monkeypatch.setenv("KERNELLAB_SANDBOX_ISOLATION", "process")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-do-not-leak")
    monkeypatch.setenv("DATABASE_URL", "postgres://kl:hunter2@db/kl")
    with pytest.raises(RunnerError, match="ANTHROPIC_API_KEY, DATABASE_URL: a plain process"):
        runner.validate(sources.SILU_PROBLEM, device="cpu")
    monkeypatch.setenv("DATABASE_URL", "postgres://db/kl")  # no credentials in it
    assert isolation.held_secrets() == ["ANTHROPIC_API_KEY"]


@pytest.mark.slow
def test_load_inline_kernel_is_accepted(cpu_pool):
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, sources.SILU_LOAD_INLINE, seed=8, timeout=450)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")
