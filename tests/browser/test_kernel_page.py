"""Open a kernel from the tree and read its source, diff, verdict and exports."""

import zipfile

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]


def test_open_a_kernel_and_its_diff(logged_in_page, stack, tmp_path):
    seeded = dashboard_seed.small_search(stack, "kernel page search")
    page = logged_in_page
    blocked = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"/searches/{seeded['search']}/")
    expect(page.locator("#live-state")).to_have_text("live")  # the script runs under the policy
    page.get_by_role("link", name="fast kernel").click()
    expect(page.get_by_role("heading", name="fast kernel")).to_be_visible()
    expect(page.locator("#idea")).to_contain_text("Vectorise the loads")
    expect(page.locator("#kernel-source .highlight")).to_contain_text("class ModelNew")
    diff = page.locator("#diff table.diff.split")
    expect(diff.locator("td.del")).to_contain_text("clamp_min(0)")
    expect(diff.locator("td.add")).to_contain_text("relu()  # vectorised")
    expect(page.locator("#correctness")).to_contain_text("randn")
    expect(page.locator("#timing svg.timing")).to_be_visible()
    expect(page.locator("#environment")).to_contain_text("580.65")
    with page.expect_download() as download:
        page.locator("#export-bundle").click()
    path = tmp_path / "bundle.zip"
    download.value.save_as(path)
    assert "python -m runner evaluate problem.py kernel.py" in zipfile.ZipFile(path).read("README.md").decode()
    assert blocked == []  # nothing on these pages needed an inline script or style
