"""`manage.py bench_run` on the CPU, end to end, as scripts/gpu_run.sh runs it on the GPU: a KernelBench
level-1 file (size constants shrunk) imported into a suite on a file database, validated by a real
evaluator child, a playbook search run started with `baselines=max-autotune,cudagraph`, its search
driven to the end; the run's scores, both modes against every baseline, come from real timings:
max-autotune timed by the runner, CUDA graphs skipped on the CPU with the reason."""

import json
from pathlib import Path

import pytest

from tests.searches.engine_env import env_for, manage, query

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

LEVEL1 = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"


def test_a_search_run_is_scored_against_the_baselines_its_searches_asked_for(tmp_path):
    source = (LEVEL1 / "19_ReLU.py").read_text()
    assert "batch_size = 4096" in source and "dim = 393216" in source
    folder = tmp_path / "level1"
    folder.mkdir()
    (folder / "19_ReLU.py").write_text(source.replace("batch_size = 4096", "batch_size = 64")
                                       .replace("dim = 393216", "dim = 4096"))
    db, report = tmp_path / "run.sqlite3", tmp_path / "run.json"
    env = {**env_for(db), "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "KERNELLAB_BASELINE_COMPILE": "0"}
    manage(db, "migrate", "--noinput", "-v", "0", env=env)
    manage(db, "import_problems", str(folder), "--suite", "L1 bit", "--device", "cpu", "--validate", env=env)
    done = manage(db, "bench_run", "--suite", "L1 bit", "--name", "graphs", "--device", "cpu", "--pool-size", "0",
                  "--jobs-in-flight", "1", "--max-seconds", "480", "--json", str(report), "proposer=playbook",
                  "rounds=1", "parents_per_round=1", "ideas_per_parent=1", "kernels_per_idea=1", "bank_size=0",
                  "baselines=max-autotune,cudagraph", env=env, timeout=560)
    assert "1 searches started, 0 refused" in done.stderr
    [(status,)] = query(db, "select status from searches_search")
    assert status == "completed", done.stderr[-3000:]
    # every evaluation of the search asked the runner for them, and the runner timed max-autotune
    jobs = query(db, "select options from searches_evaluationjob where purpose != 'validate'")
    assert len(jobs) >= 2 and {tuple(json.loads(o).get("baselines", ())) for (o,) in jobs} == {
        ("max-autotune", "cudagraph")}
    results = [json.loads(r) for (r,) in query(db, "select result from searches_benchmarkrun where status='correct'")]
    assert results, done.stderr[-3000:]
    for result in results:
        more = result["baseline"]["more"]
        assert more["max-autotune"]["ms"] > 0 and more["max-autotune"]["mean_ms"] > 0
        assert more["cudagraph"] == {"ms": None, "mean_ms": None, "skipped": "CUDA graphs need a CUDA device"}
        assert result["speedup_vs_more"]["max-autotune"] == pytest.approx(
            more["max-autotune"]["ms"] / result["timing"]["median_ms"])

    written = json.loads(report.read_text())
    [run] = written["runs"]
    # the evaluator, per problem: every candidate judged, the device time each held
    [row] = written["evaluator"]["problems"]
    judged = query(db, "select count(*) from searches_benchmarkrun")[0][0]
    assert row["judged"] == written["evaluator"]["judged"] == judged and row["correct"] == len(results)
    assert row["retried"] == 0 and row["why"] is None  # nothing handed back; a correct kernel, so no "why"
    # the ceiling rounded to 0.1 from the unrounded median
    assert 0 < row["timing_s"] < row["device_s"]
    assert row["ceiling_per_min"] == pytest.approx(60 / row["device_s"], rel=1e-3, abs=0.06)
    assert written["evaluator"]["candidates_per_min"] > 0
    assert run["baselines"] == ["eager", "compile", "max-autotune", "cudagraph"]
    scores = {(s["mode"], s["baseline"]): s for s in run["scores"]}
    assert set(scores) == {(mode, baseline) for mode in ("KernelLab", "KernelBench") for baseline in run["baselines"]}
    for mode in ("KernelLab", "KernelBench"):
        autotune = scores[(mode, "max-autotune")]
        assert autotune["baseline"] == "max-autotune" and autotune["skipped"] == []
        assert autotune["rules"]["best"]["fast_p"]["fast_0"] == 1.0  # the problem solved
        assert autotune["per_problem"][0]["best"]["speedup"] > 0  # against the timed max-autotune
        graphs = scores[(mode, "cudagraph")]
        assert graphs["skipped"] == ["CUDA graphs need a CUDA device"]
        assert graphs["per_problem"][0]["best"]["speedup"] is None
    # the table of the same, on stdout
    assert "KernelBench  max-autotune     best of N" in done.stdout
    assert "not timed for some kernels: CUDA graphs need a CUDA device" in done.stdout
    assert f"evaluator: {judged} judged in" in done.stdout, done.stdout[-2000:]
