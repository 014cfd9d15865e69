"""`manage.py bench_seeds` on CPU, end to end: two catalog problems validated by one real evaluator,
a playbook search on each at once, and one row per problem whose figures are the stored ones."""

import json
import re
import sqlite3

import pytest
from django.core.management import CommandError

from benches import seeds
from benches.management.commands.bench_seeds import Command as BenchSeedsCommand
from searches.config import SEARCH_CONFIG as CONFIG
from tests.searches.engine_env import env_for, manage


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_seed_searches_report_the_stored_best_kernel_of_each_problem(tmp_path):
    database, report_path = tmp_path / "seeds.sqlite3", tmp_path / "seeds.json"
    env = env_for(database, KERNELLAB_CACHE_DIR=tmp_path / "cache")
    result = manage(database, "bench_seeds", "--device", "cpu", "--keys", "gelu-cpu,softmax-cpu", "--rounds", "1",
                    "--parents", "1", "--ideas", "1", "--kernels", "1", "--pool-size", "0", "--jobs-in-flight", "1",
                    "--database", f"sqlite:///{database}", "--json", str(report_path), env=env, timeout=560)

    rows = json.loads(report_path.read_text())
    assert [row["problem"] for row in rows] == ["gelu-cpu", "softmax-cpu"]
    with sqlite3.connect(database) as db:
        for row in rows:
            assert row["status"] == "completed" and row["rounds"] == 1 and row["candidates"] >= 2
            fastest = db.execute(
                "SELECT k.median_ms, k.speedup_vs_eager FROM searches_kernel k JOIN searches_search s ON k.search_id = s.id"
                " JOIN searches_problem p ON s.problem_id = p.id WHERE p.catalog_key = ? AND k.status = 'correct'"
                " ORDER BY k.median_ms LIMIT 1", (row["problem"],)).fetchone()
            assert row["best_ms"] == pytest.approx(fastest[0]) and row["speedup_vs_eager"] == pytest.approx(fastest[1])
            low, high = row["ci95_ms"]
            assert low <= row["best_ms"] <= high
            assert row["precision"] == "fp32" and row["eager_ms"] > 0 and row["wall_s"] > 0
            assert len(row["load_average"]) == 3 and all(v >= 0 for v in row["load_average"])
            lo, hi = row["paired_ci95"]  # CPU: eager timed between the kernel's blocks
            assert lo <= row["paired_speedup_vs_eager"] <= hi
            assert f"{row['best_ms']:.4f} [{low:.4f}, {high:.4f}]" in result.stdout
    assert "load average:" in result.stdout


def test_bench_seeds_reads_the_tree_shape_from_the_settings():
    parser = BenchSeedsCommand().create_parser("manage.py", "bench_seeds")
    found = {action.dest: action for action in parser._actions}
    for name in seeds.SHAPE:
        assert found[name].option_strings == list(CONFIG[name].flags)
        assert found[name].default == seeds.SHAPE_DEFAULTS.get(name, CONFIG[name].default)
    assert seeds.SHAPE_DEFAULTS == {"rounds": 3}  # docs/BENCHMARKS.md reports bench_seeds at three rounds
    options = vars(parser.parse_args(["--parents", "1", "--ideas", "1", "--kernels", "1", "--rounds", "1"]))
    assert {name: options[name] for name in seeds.SHAPE} == dict.fromkeys(seeds.SHAPE, 1)
    with pytest.raises(CommandError, match=re.escape(CONFIG.rounds.limits)):
        parser.parse_args(["--rounds", "0"])


def test_bench_seeds_hands_its_tree_shape_to_its_child(monkeypatch):
    from benches.management.commands import bench_seeds

    command = BenchSeedsCommand()
    parser = command.create_parser("manage.py", "bench_seeds")
    given = {}
    monkeypatch.setattr(bench_seeds, "rerun_on_database", lambda name, arguments, device, database:
                        given.setdefault("arguments", arguments) and 0)
    opts = vars(parser.parse_args(["--device", "cpu", "--parents", "1", "--kernels", "4"]))
    command._in_child(opts)
    child = vars(parser.parse_args(given["arguments"] + ["--here"]))
    assert {name: child[name] for name in seeds.SHAPE} == {
        "rounds": 3, "parents_per_round": 1, "ideas_per_parent": 3, "kernels_per_idea": 4}
