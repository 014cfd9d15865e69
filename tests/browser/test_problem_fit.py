"""A 160 GB problem is refused at submit, before any sandbox runs it, with both numbers."""

import pytest
from playwright.sync_api import expect

from tests.searches.test_problem_fit import HUGE

pytestmark = [pytest.mark.e2e]


def test_a_160_gb_problem_is_refused_at_submit(logged_in_page):
    page = logged_in_page
    page.goto("/problems/new/")
    page.get_by_label("Name").fill("far too big")
    page.get_by_label("Reference source (KernelBench format)").fill(HUGE)
    page.get_by_label("Target device").select_option("cpu")
    page.get_by_role("button", name="Create problem").click()
    expect(page.locator(".errorlist")).to_contain_text("Too large for the workers here: its inputs take 160.0 GB")
    expect(page.locator(".errorlist")).to_contain_text("the largest cpu worker has")
    expect(page).to_have_url("/problems/new/")
