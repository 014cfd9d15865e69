"""The leaderboard ranks correct kernels and exports them."""

import csv
import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]


def test_leaderboard_and_its_exports(logged_in_page, stack, tmp_path):
    seeded = dashboard_seed.small_search(stack, "leaderboard search")
    page = logged_in_page
    page.goto(f"/problems/{seeded['problem']}/leaderboard/")
    ranking = page.locator("table.ranking tbody tr.entry")
    expect(ranking).to_have_count(3)
    expect(ranking.first).to_contain_text("faster kernel")
    references = page.locator("table.ranking tbody tr.reference")
    expect(references).to_have_text([re.compile("torch.compile"), re.compile("PyTorch eager")])
    expect(page.locator("table.ranking tbody tr").nth(3)).to_contain_text("PyTorch eager")  # 0.8, 1.0 then the 1.0 seed
    with page.expect_download() as download:
        page.locator("#export-csv").click()
    download.value.save_as(tmp_path / "board.csv")
    rows = list(csv.DictReader((tmp_path / "board.csv").open()))
    assert [r["name"] for r in rows] == ["faster kernel", "fast kernel", "seed kernel"]
    assert rows[0]["rank"] == "1" and rows[0]["ran_by"] == "e2e"
    with page.expect_download() as download:
        page.locator("#export-json").click()
    download.value.save_as(tmp_path / "board.json")
    exported = json.loads((tmp_path / "board.json").read_text())
    assert exported["entries"][0]["kernel"] == seeded["faster"]
