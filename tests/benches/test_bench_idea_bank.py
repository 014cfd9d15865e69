"""`manage.py bench_idea_bank` end to end at its smallest: the scripted model behind the local Messages API,
the real engine and prompt, two related searches per mode on a temporary database; the table it prints
has a row per search and the ratio line the benchmark's target is read from."""

import re

import pytest

from tests.searches.engine_env import env_for, manage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_two_searches_per_mode_print_the_calls_table(tmp_path):
    db = tmp_path / "bank.sqlite3"
    result = manage(db, "bench_idea_bank", "--seeds", "1", "--searches", "2", "--rounds", "3",
                    env=env_for(db), timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line for line in result.stdout.splitlines() if re.match(r"\| [12] \|", line)]
    assert len(rows) == 2, result.stdout[-2000:]
    assert all(len(row.strip("|").split("|")) == 8 for row in rows)
    assert re.search(r"searches 2-2: the team's bank takes \d+\.\d\d of the calls of bank off", result.stdout)
