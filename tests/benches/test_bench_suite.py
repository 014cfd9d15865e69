"""`manage.py bench_suite` on CPU, end to end: two KernelBench level-1 problems (their own files, size
constants shrunk) imported into a suite on a temporary database, validated by a real evaluator child,
the playbook searches run by the engine; the JSON report holds each problem's row and the sweep suite's
fast_p, and a second run (on a fresh database) reads it, skips what is done and keeps its sweep rows."""

import json
from pathlib import Path

import pytest

from tests.searches.engine_env import env_for, manage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

LEVEL1 = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"
PROBLEMS = ("19_ReLU.py", "20_LeakyReLU.py")


def shrunk(name: str) -> str:
    source = (LEVEL1 / name).read_text()
    assert "batch_size = 4096" in source and "dim = 393216" in source
    return source.replace("batch_size = 4096", "batch_size = 64").replace("dim = 393216", "dim = 4096")


def run(user_db, folder, report_path):
    return manage(user_db, "bench_suite", "--problems", str(folder), "--device", "cpu", "--json", str(report_path),
                  "--candidates", "2", "--pool-size", "0", "--jobs-in-flight", "1", "--max-seconds", "300",
                  env={**env_for(user_db), "KERNELLAB_BASELINE_COMPILE": "1"}, timeout=380)  # as a user runs it


def test_a_cpu_run_reports_each_problem_and_a_second_run_resumes(tmp_path):
    """The first run has ReLU only; the second, on a fresh temporary database with LeakyReLU added,
    skips ReLU (done) and keeps its sweep row, so the report's fast_p covers both runs."""
    folder = tmp_path / "level1"
    folder.mkdir()
    (folder / PROBLEMS[0]).write_text(shrunk(PROBLEMS[0]))
    user_db, report_path = tmp_path / "user.sqlite3", tmp_path / "level1.json"

    first = run(user_db, folder, report_path)
    assert not user_db.exists()  # everything went to the temporary database
    report = json.loads(report_path.read_text())
    relu = report["problems"]["19_ReLU.py"]["search"]
    assert relu["status"] == "completed" and relu["candidates"] == 2
    assert relu["best_ms"] > 0 and relu["speedup_vs_eager"] > 0 and relu["speedup_vs_compile"] > 0
    assert "done 1 of 1; 0 left" in first.stdout

    (folder / PROBLEMS[1]).write_text(shrunk(PROBLEMS[1]))
    second = run(user_db, folder, report_path)
    assert "1 problems this run" in second.stderr and "(1 done before)" in second.stderr
    report = json.loads(report_path.read_text())
    assert report["suite"] == "KernelBench level 1" and report["problems_in_suite"] == 2
    assert set(report["problems"]) == set(PROBLEMS)
    assert report["problems"]["19_ReLU.py"]["search"] == relu  # not run again
    for name, row in report["problems"].items():
        assert (row["level"], row["number"]) == (1, int(name.split("_")[0]))
        assert row["validation"]["status"] == "ok", row
        assert row["family"] == "elementwise"
        assert row["validation"]["eager_ms"] > 0
        # torch.compile's baseline, or why there is none (its CPU compile can fail on a loaded host)
        assert (row["validation"]["compile_ms"] or 0) > 0 or "failed" in (row["validation"]["compile_mode"] or ""), row
        assert row["do_bench"]["status"] == "skipped"  # triton's do_bench is CUDA only
        assert row["h100_ms"]["eager"] > 0  # KernelBench's published baseline beside it
        assert row["done"] is True
    # The playbook reads LeakyReLU's negative_slope from __init__'s default: its search completes too.
    leaky = report["problems"]["20_LeakyReLU.py"]["search"]
    assert leaky["status"] == "completed" and not leaky["cut_by_deadline"] and leaky["best_ms"] > 0
    assert leaky["speedup_vs_eager"] > 0 and leaky["speedup_vs_compile"] > 0

    # fast_p as the sweep suite's page computes it, over both runs' databases: both problems correct,
    # each with one best kernel of the search and that kernel's two ratios. On the CPU the best is the
    # highest paired eager ratio, so at least the fastest kernel's (each run's eager is paired with it:
    # the fastest is not always the best ratio); the compile ratio divides one validation time by the
    # kernel's median, so at most the fastest kernel's, and the same where the two are one kernel.
    [score] = report["sweep"]["scores"]
    assert score["problems"] == 2 and [r["file"] for r in score["rows"]] == list(PROBLEMS)
    assert score["counts"]["correct"] == 2
    for row, search in zip(score["rows"], (relu, leaky)):
        assert row["speedup_vs_eager"] >= search["speedup_vs_eager"]
        assert row["speedup_vs_compile"] <= search["speedup_vs_compile"]
        if row["speedup_vs_eager"] == search["speedup_vs_eager"]:
            assert row["speedup_vs_compile"] == search["speedup_vs_compile"]
    for baseline in ("eager", "compile"):
        key = f"speedup_vs_{baseline}"
        assert score["fast_p"][baseline]["fast_0"]["count"] == 2
        speedups = [row[key] for row in score["rows"]]
        assert score["fast_p"][baseline]["fast_1"]["count"] == sum(s > 1 for s in speedups)
        assert score["geomean"][baseline] == pytest.approx((speedups[0] * speedups[1]) ** 0.5)
    assert report["summary"]["done"] == 2 and report["summary"]["playbook_searches"] == 2
    assert len(report["calls"]) == 2 and report["calls"][1]["planned"] == ["20_LeakyReLU.py"]
    assert "done 2 of 2; 0 left" in second.stdout
