"""The parent trusts nothing a sandbox sends: every malformed or impossible verdict is
refused with a reason, never an exception; the baseline cache is checked on read."""

import json

import pytest

from runner.common import counters
from runner.host import baselines, schema
from runner.host.evaluation import empty_verdict


def good_verdict() -> dict:
    samples = [0.5, 0.51, 0.49, 0.5, 0.52]
    return {"status": "correct", "reason": "", "precision": "fp32", "compile": {"seconds": 0.2, "log": ""},
            "correctness": {"atol": 1e-5, "rtol": 1e-5, "passed": True, "per_distribution": [
                {"name": "get_inputs", "trials": 2, "err": 0.1, "ref_fp32_err": 0.05, "max_abs_err": 1e-7,
                 "skipped": False, "passed": True}]},
            "timing": {"median_ms": 0.5, "samples_ms": samples}, "device_fault": False,
            "phases": {"build_s": 0.1}, "log": ""}


def test_a_good_verdict_passes_and_its_summary_is_recomputed():
    clean = schema.evaluation(good_verdict())
    assert clean["status"] == "correct"
    assert clean["timing"]["median_ms"] == 0.5 and clean["timing"]["n"] == 5 and clean["timing"]["min_ms"] == 0.49


@pytest.mark.parametrize("change, words", [
    (lambda v: v["compile"].update(seconds="not-a-number"), "compile.seconds is not a number"),
    (lambda v: v.update(status="fastest"), "is not a verdict"),
    (lambda v: v["timing"].update(samples_ms=[float("nan")]), "out of range"),
    (lambda v: v["timing"].update(samples_ms=[-1.0]), "out of range"),
    (lambda v: v["timing"].update(median_ms=0.008), "does not match its samples"),
    (lambda v: v["timing"].update(samples_ms=[0.1] * 200_000), "samples"),
    (lambda v: v.update(reason="x" * 100_000), "longer than"),
    (lambda v: v.update(extra=1), "unknown field"),
    (lambda v: v.update(timing=None), "needs a timing"),
    (lambda v: v.update(exchange={"distributions": "all", "calls": [], "timed_calls": 1}), "not a short list"),
    (lambda v: v.update(exchange={"distributions": [], "calls": [{"call": -1, "set": 0, "outputs": []}],
                                  "timed_calls": 1}), "calls"),
    (lambda v: v.update(phases={"build_s": True}), "not a number"),
    (lambda v: v.update(compile=[1, 2]), "not an object"),
    (lambda v: v.update(build={"kernels": [{"name": "k", "registers": -4}], "device": {}}), "out of range"),
    (lambda v: v.update(build={"kernels": [{"name": "k", "grid": [1, 2, 3, 4]}], "device": {}}), "short list"),
    (lambda v: v.update(build={"kernels": [], "device": {"secret": 1}}), "unknown field"),
])
def test_malformed_verdicts_are_refused_with_a_reason(change, words):
    verdict = good_verdict()
    change(verdict)
    with pytest.raises(schema.Malformed, match=words):
        schema.evaluation(verdict)


def test_a_build_report_is_kept_cleaned():
    verdict = good_verdict()
    verdict["build"] = {"kernels": [{"name": "softmax_rows", "registers": 40, "shared_bytes": 4096, "grid": [4096],
                                     "block": [256, 1, 1], "local_bytes": 0, "launches": 1, "time_share": 1.0}],
                        "device": {"name": "NVIDIA H200", "sm_count": 132}}
    build = schema.evaluation(verdict)["build"]
    assert build["kernels"][0]["registers"] == 40 and build["kernels"][0]["grid"] == [4096]
    assert build["device"]["sm_count"] == 132 and build["device"]["registers_per_sm"] is None


def test_a_counters_jobs_output_is_kept_as_text_for_the_parent_to_read():
    assert schema.counters_job({"returncode": 0, "output": '"ID","Kernel Name"\n'}) == {
        "returncode": 0, "output": '"ID","Kernel Name"\n'}
    for raw, words in [({"returncode": 0, "output": "x" * (counters.PROFILE_OUTPUT_LIMIT + 1)}, "longer"),
                       ({"returncode": 0, "output": "", "kernels": []}, "unknown field"),
                       ({"returncode": "0", "output": ""}, "not a number"), (None, "not an object")]:
        with pytest.raises(schema.Malformed, match=words):
            schema.counters_job(raw)


def test_a_sandbox_cannot_claim_correctness():
    """Correctness is the trusted judge's (runner/judge/referee.py): whatever the sandbox says is dropped."""
    assert schema.evaluation(good_verdict())["correctness"] is None


@pytest.mark.parametrize("change, words", [
    (lambda c: c["per_distribution"][0].update(err=3.7e23), "says passed with err"),
    (lambda c: c["per_distribution"][0].update(passed=False), "a distribution failed"),
    (lambda c: c.update(per_distribution="all"), "not a short list"),
])
def test_the_judges_correctness_is_checked_too(change, words):
    correctness = good_verdict()["correctness"]
    assert schema.correctness(correctness)["passed"] is True
    change(correctness)
    with pytest.raises(schema.Malformed, match=words):
        schema.correctness(correctness)


def test_truths_are_checked():
    entry = {"key": "set/0/0", "offset": 0, "nbytes": 16, "shape": [4], "dtype": "float32"}
    ok = {"status": "ok", "reason": "", "atol": 1e-4, "rtol": 1e-4, "expected": [{"shape": [4], "dtype": "float32"}],
          "distributions": [{"name": "get_inputs", "skipped": False, "trials": [{"ref_err": 0.1, "truths": [entry]}]}],
          "sets": [{"index": 0, "ref_err": None, "truths": [entry]}], "set_count": 2}
    assert schema.truths(ok)["atol"] == 1e-4
    for broken in ({**ok, "atol": "tight"}, {**ok, "set_count": 0}, {**ok, "expected": []},
                   {**ok, "sets": [{"index": 0, "ref_err": -1, "truths": [entry]}]}, {**ok, "extra": 1}):
        with pytest.raises(schema.Malformed):
            schema.truths(broken)


@pytest.mark.parametrize("raw", [None, [], "correct", 3, {"status": None}])
def test_anything_that_is_not_a_verdict_is_refused(raw):
    with pytest.raises(schema.Malformed):
        schema.evaluation(raw)


def test_validations_and_environments_are_checked():
    ok = {"status": "ok", "reason": "", "outputs": [{"shape": [4, 8], "dtype": "float32"}], "family": None,
          "flops": 10, "min_bytes": 64, "baseline": {"eager_ms": 0.2, "compile_ms": None, "compile_mode": None}}
    assert schema.validation(ok)["baseline"]["eager_ms"] == 0.2
    for broken in ({**ok, "baseline": {"eager_ms": -1}}, {**ok, "baseline": {"eager_ms": None}},
                   {**ok, "outputs": [{"shape": ["4"], "dtype": "float32"}]}, {**ok, "flops": "many"}):
        with pytest.raises(schema.Malformed):
            schema.validation(broken)
    with pytest.raises(schema.Malformed):
        schema.environment({"device_name": "H200", "threads": "8"})
    with pytest.raises(schema.Malformed):
        schema.environment({"device_name": "x" * 1000})


def test_every_key_of_an_empty_verdict_survives():
    assert {"schema", "status", "reason", "quarantined", "timing", "environment"} <= set(empty_verdict(3))


def validation_entry(eager_ms=0.25) -> dict:
    return {"schema": 1, "status": "ok", "reason": "", "outputs": [{"shape": [8], "dtype": "float32"}],
            "family": None, "flops": 8, "min_bytes": 64,
            "baseline": {"eager_ms": eager_ms, "compile_ms": None, "compile_mode": None},
            "environment": {"device_name": "cpu", "runner_version": "x"}}


def test_the_baseline_cache_is_checked_on_read(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path))
    key = baselines.key("problem", "cpu", {"device_name": "cpu"}, False)
    baselines.store(key, validation_entry())
    assert baselines.load(key)["baseline"]["eager_ms"] == 0.25
    path = tmp_path / "baselines" / f"{key}.json"

    entry = json.loads(path.read_text())
    entry["validation"]["baseline"]["eager_ms"] = "fast"
    path.write_text(json.dumps(entry))
    assert baselines.load(key) is None, "a malformed entry must be re-measured, not used"

    other = baselines.key("another problem", "cpu", {"device_name": "cpu"}, False)
    baselines.store(other, validation_entry(2.5))
    path.write_text((tmp_path / "baselines" / f"{other}.json").read_text())
    assert baselines.load(key) is None, "an entry copied under another problem's key must not be used"

    path.write_text("{not json")
    assert baselines.load(key) is None


def test_the_baseline_cache_lives_in_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("KERNELLAB_CACHE_DIR", raising=False)
    monkeypatch.setenv("KERNELLAB_DATA_DIR", str(tmp_path))
    assert baselines.cache_dir() == tmp_path / "baselines"
