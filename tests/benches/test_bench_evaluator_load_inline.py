"""`manage.py bench_evaluator --searches 1 --load-inline N` on CPU, end to end, through one real
evaluator and its sandboxes: a playbook search, then N distinct load_inline kernels built with the
real g++, then the same N again, every one restored from the build cache; plus the contention
summary's arithmetic."""

import json

import pytest

from benches import throughput

from tests.searches.engine_env import env_for, manage


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_search_then_a_load_inline_pass_then_a_cached_pass(tmp_path):
    user_db, report_path = tmp_path / "user.sqlite3", tmp_path / "bench.json"
    env = env_for(user_db, KERNELLAB_CACHE_DIR=tmp_path / "cache")
    result = manage(user_db, "bench_evaluator", "--device", "cpu", "--searches", "1", "--candidates", "1",
                    "--load-inline", "1", "--pool-size", "0", "--jobs-in-flight", "1", "--max-seconds", "400",
                    "--json", str(report_path), env=env, timeout=560)

    both = json.loads(report_path.read_text())
    search, report = both["search"], both["load_inline"]
    assert search["settings"]["mode"] == "search" and search["by_purpose"].get("search") == 1
    assert search["verdicts"] == {"correct": sum(search["by_purpose"].values())}
    assert result.stdout.count("candidates/min") == 3  # a table per window
    cached = report["cached_pass"]
    assert report["settings"]["mode"] == "load_inline" and cached["settings"]["mode"] == "load_inline, cached"
    assert report["verdicts"] == {"correct": 1} and cached["verdicts"] == {"correct": 1}
    assert report["build_cache"] == {"published": 1}
    assert cached["build_cache"] == {"hit": 1}
    assert cached["phases"]["compile"]["median_s"] < report["phases"]["compile"]["median_s"] / 10
    assert [row["builds_during_timing"] for row in cached["timed_under_builds"]] == [0]
    assert report["contention"]["quiet_n"] == 1


def rows(*pairs):
    return {"timed_under_builds": [{"kernel": "", "median_ms": ms, "builds_during_timing": n} for ms, n in pairs]}


def test_contention_compares_the_loaded_medians_with_the_quiet_median():
    quiet = rows((1.00, 0), (1.002, 0), (0.998, 0))
    # outside the quiet pass's narrow range, but within 2% of its median: not disturbed
    inside = throughput.contention(rows((1.01, 9), (0.99, 8), (5.0, 2)), quiet)
    assert inside["within"] is True and inside["loaded_n"] == 2 and inside["quiet_spread"] == pytest.approx(0.004)
    assert inside["loaded_outside_quiet_range"] == 2 and inside["loaded_worst_vs_quiet"] == pytest.approx(0.01)
    outside = throughput.contention(rows((1.01, 9), (1.05, 12)), quiet)
    assert outside["within"] is False and outside["loaded_worst_vs_quiet"] == pytest.approx(0.05)
    assert throughput.contention(rows((1.0, 3)), quiet)["within"] is None  # nothing timed under 8 builds
