"""The fault corpus through one warm pool: each fault gets its own classification, and the healthy
kernel evaluated right after it, in the same pool, is still judged correct."""

import time

import pytest

from .corpus import cases, params, read

pytestmark = pytest.mark.slow

TWINS = {c["id"]: c for c in cases(kinds=("honest",))}


@pytest.mark.parametrize("case", params(kinds=("fault",)))
def test_fault_classified_and_next_candidate_judged_right(case, request):
    pool = request.getfixturevalue("cuda_pool" if case["device"] == "cuda" else "cpu_pool")
    problem = read(case["problem"])
    timeout = case.get("timeout", 180)

    started = time.monotonic()
    fault = pool.evaluate(problem, read(case["kernel"]), seed=99, timeout=timeout)
    elapsed = time.monotonic() - started
    print(f"{case['id']}: status={fault['status']!r} reason={fault['reason']!r} ({elapsed:.1f} s)")

    assert fault["status"] in case["expected"], (
        f"{case['class']}: status={fault['status']!r} reason={fault['reason']!r}")
    if fault["status"] != "correct":
        assert fault["reason"], "a fault verdict must say what happened"
    if case.get("reason_contains"):
        assert case["reason_contains"] in fault["reason"], f"the reason should say {case['reason_contains']}"
    assert elapsed < timeout + 60, f"the runner took {elapsed:.0f} s for a {timeout} s limit"
    if fault["status"] == "compile_error":
        assert fault["compile"]["log"] or fault["reason"], "a compile error must carry the compiler's message"

    twin = TWINS[case["twin"]]
    healthy = pool.evaluate(read(twin["problem"]), read(twin["kernel"]), seed=100)
    assert healthy["status"] == "correct", f"after {case['id']}: {healthy['status']!r} {healthy['reason']!r}"
    assert healthy["quarantined"] is False
