"""Suites in a real browser: upload a zip of ten KernelBench problems, read the per-file
report, upload it again and see ten duplicates, then open the suite page."""

import re
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LEVEL1 = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"


def test_upload_a_zip_of_ten_and_see_the_report(logged_in_page, tmp_path):
    page = logged_in_page
    blocked = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    ten = sorted(LEVEL1.glob("*.py"), key=lambda p: int(p.name.split("_")[0]))[10:20]
    archive_path = tmp_path / "level1.zip"
    with zipfile.ZipFile(archive_path, "w") as archive:
        for path in ten:
            archive.write(path, f"level1/{path.name}")

    page.get_by_role("link", name="Suites", exact=True).click()
    page.get_by_role("link", name="Import problems").click()
    page.get_by_label("Suite").fill("KernelBench level 1 (browser)")
    page.get_by_label(re.compile("Problem files")).set_input_files(str(archive_path))
    page.get_by_role("button", name="Import").click()

    expect(page.locator("#import-summary")).to_contain_text("10 accepted, 0 duplicates, 0 refused, of 10 files.")
    rows = page.locator("#import-report tbody tr")
    expect(rows).to_have_count(10)
    expect(rows.first).to_contain_text("level1/11_4D_tensor_matrix_multiplication.py")
    expect(rows.first.locator(".badge")).to_have_text("accepted")

    page.goto("/suites/import/")
    page.get_by_label("Suite").fill("KernelBench level 1 (browser)")
    page.get_by_label(re.compile("Problem files")).set_input_files(str(archive_path))
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#import-summary")).to_contain_text("0 accepted, 10 duplicates, 0 refused, of 10 files.")

    page.get_by_role("link", name="KernelBench level 1 (browser)").click()
    expect(page.get_by_role("heading", name="KernelBench level 1 (browser)")).to_be_visible()
    expect(page.get_by_text("Stored, not yet validated")).to_have_count(10)
    assert blocked == []
