"""`manage.py bench_evaluator` on CPU, end to end: its own temporary database (the configured one
is never created), the catalog problem validated as a job, a playbook search driven by the
engine, a real evaluator child and real sandboxes; the JSON report counts what was judged,
the verified reruns queued at completion included."""

import json

import pytest

from tests.searches.engine_env import env_for, manage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PHASES = {"queue wait", "compile", "device wait", "correctness", "timing", "truths", "sandbox", "warm wait"}


def test_a_small_cpu_run_reports_what_it_judged(tmp_path):
    user_db, report_path = tmp_path / "user.sqlite3", tmp_path / "bench.json"
    result = manage(user_db, "bench_evaluator", "--device", "cpu", "--candidates", "1", "--searches", "2",
                    "--pool-size", "1",
                    "--jobs-in-flight", "1", "--max-seconds", "120", "--json", str(report_path),
                    env=env_for(user_db), timeout=240)

    assert not user_db.exists()  # everything went to the temporary database
    report = json.loads(report_path.read_text())
    assert report["problem"] == "softmax-cpu"
    assert report["search_status"] == "completed"  # both
    assert len(set(report["searches"])) == 2
    assert report["by_purpose"].get("search") == 2  # one starting kernel each
    assert report["by_purpose"].get("rerun", 0) >= 1  # the verified reruns queued at completion, judged too
    assert report["candidates_judged"] == sum(report["by_purpose"].values()) == sum(report["verdicts"].values())
    assert report["jobs_failed"] == 0
    assert report["wall_s"] > 0 and report["candidates_per_min"] > 0
    assert 0 < report["device_busy_share"] <= 1
    assert set(report["phases"]) == PHASES
    assert report["phases"]["compile"]["n"] == report["candidates_judged"]
    assert report["phases"]["timing"]["total_s"] > 0
    rows = report["candidates"]  # each judged run, in order, with the phases the table sums
    assert len(rows) == report["candidates_judged"] and all(row["kernel"] for row in rows)
    assert sum(row["timing_s"] for row in rows) == pytest.approx(report["phases"]["timing"]["total_s"], abs=0.01)
    assert all(0 <= row["started_s"] <= report["wall_s"] for row in rows)  # the window began before the searches
    settings = report["settings"]
    assert (settings["mode"], settings["device"], settings["jobs_in_flight"], settings["pool_size"]) == \
        ("2 searches", "cpu", 1, 1)
    assert settings["device_name"]
    assert "candidates/min" in result.stdout and "queue wait" in result.stdout
