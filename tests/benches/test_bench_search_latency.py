"""`manage.py bench_search_latency` on CPU, end to end: a small Anthropic search against the local
stand-in for the Messages API (replies taking a model's time, scaled down), the real engine, a child
evaluator and its sandboxes, on a temporary database; the report says what the user waited for."""

import json
import math

import pytest

from tests.searches.engine_env import env_for, manage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


def test_a_small_search_reports_its_latency_and_calls_in_flight(tmp_path):
    user_db, report_path = tmp_path / "user.sqlite3", tmp_path / "latency.json"
    result = manage(user_db, "bench_search_latency", "--device", "cpu", "--scale", "0.05", "--rounds", "1",
                    "--parents", "1", "--ideas", "2", "--kernels", "2", "--broken", "0.5", "--json", str(report_path),
                    env=env_for(user_db), timeout=360)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not user_db.exists()
    report = json.loads(report_path.read_text())
    assert report["status"] == "completed" and report["correct"] >= 1
    # the round's four kernel calls went out together after its ideas call
    assert report["calls_in_flight_max"] >= 4 and report["calls_in_flight_mean"] > 1
    assert report["serial_latency_s"] > report["model_busy_s"] > 0
    assert report["calls"] >= 6  # seed, ideas, four kernels (and the broken ones' repairs)
    assert "wall_s" in result.stdout and "evaluations_saved_by_dedup" in result.stdout
    # the ratio is of the unrounded seconds, which the report shows to 0.1 s: it lies where those allow
    wall, serial = report["wall_s"], report["serial_latency_s"]
    assert (wall - 0.05) / (serial + 0.05) - 0.0005 <= report["wall_over_serial"] <= (wall + 0.05) / (serial - 0.05) + 0.0005
    # where the time went: a slice per 30 s (at least one), round 1's start, no counters on the CPU
    assert len(report["calls_in_flight_by_30s"]) == math.ceil(report["wall_s"] / 30)
    assert max(report["calls_in_flight_by_30s"]) > 0
    assert len(report["round_starts_s"]) == 1 and report["counter_reruns_s"] == []
    # the starting kernel's profile reached the round's ideas request and its page
    assert report["ideas_requests_with_a_profile"] == "1 of 1" and report["profile_in_an_ideas_request"]
    assert "perf_event_open stays refused" in report["profile_on_the_kernel_page"]
