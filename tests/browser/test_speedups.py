"""The same search's best speedup, with the baseline time it used, on the tree, the Searches list,
the leaderboard and its export (searches/selectors/speedups.py)."""

import json
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]

SHOTS = Path(tempfile.gettempdir()) / "kernellab-narrow"  # as the other browser tests' screenshots


def test_one_best_speedup_on_every_page(logged_in_page, stack, tmp_path):
    seeded = dashboard_seed.paired_cpu_search(stack)
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/")
    expect(page.locator("#best-line")).to_contain_text("0.2100 ms · 1.15× paired eager (paired eager 0.2415 ms)")

    page.goto("/searches/")
    row = page.locator("tr", has_text="paired search")
    expect(row.locator("td.best-speedup")).to_have_text("1.15× paired eager (0.2100 vs 0.2415 ms)")
    page.screenshot(path=str(SHOTS / "best-speedup-list.png"))

    page.goto(f"/problems/{seeded['problem']}/leaderboard/")
    first = page.locator("table.ranking tbody tr.entry").first
    expect(first).to_contain_text("loaded")
    expect(first).to_contain_text("1.15× paired eager (0.2100 vs 0.2415 ms)")
    expect(page.locator("#paired-note")).to_contain_text("the reference rows and × compile are the validation's")
    page.screenshot(path=str(SHOTS / "best-speedup-leaderboard.png"), full_page=True)

    with page.expect_download() as download:
        page.locator("#export-json").click()
    download.value.save_as(tmp_path / "board.json")
    best = json.loads((tmp_path / "board.json").read_text())["entries"][0]
    assert (best["kernel"], best["speedup_vs_eager"], best["baseline"], best["baseline_eager_ms"]) == (
        seeded["loaded"], 1.15, "paired eager", 0.2415)
