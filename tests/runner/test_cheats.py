"""Every cheating kernel of the corpus through the real runner (sandboxed, on the CPU; the CUDA
corpus with -m gpu): its verdict must be one its index entry allows, and the honest twins on the
same problems must be judged correct and not quarantined."""

import pytest

from .corpus import params, read

pytestmark = pytest.mark.slow


def evaluate(pool, case: dict) -> dict:
    return pool.evaluate(read(case["problem"]), read(case["kernel"]), seed=1234,
                         timeout=case.get("timeout", 180))


def describe(result: dict) -> str:
    return f"status={result['status']!r} quarantined={result['quarantined']} reason={result['reason']!r}"


@pytest.mark.parametrize("case", params(kinds=("honest", "cheat")))
def test_corpus_verdict(case, request):
    pool = request.getfixturevalue("cuda_pool" if case["device"] == "cuda" else "cpu_pool")
    result = evaluate(pool, case)
    print(f"{case['id']}: {describe(result)}")  # shown with -rP: the observed verdict for the record

    assert result["status"] in case["expected"], f"{case['class']}: {describe(result)}"
    assert result["quarantined"] is case["quarantined"], f"{case['class']}: {describe(result)}"
    if result["status"] != "correct":
        assert result["reason"], "a verdict against a kernel must say why"
    if result["quarantined"]:
        assert result["quarantine_reason"]
    if case.get("advised"):  # decided by the run, with the static finding said beside the verdict
        assert result["advisories"], describe(result)
    if case["kind"] == "honest":
        assert result["timing"]["median_ms"] > 0
        assert result["correctness"]["passed"] is True
