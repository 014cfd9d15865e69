"""Pick two nodes in the tree and compare them side by side."""

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]


def test_compare_two_kernels_picked_in_the_tree(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "compare search")
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/")
    button = page.locator("#compare-picked")
    expect(button).to_be_disabled()
    page.locator(f"input.pick[value='{seeded['seed']}']").check()
    expect(button).to_be_disabled()
    page.locator(f"input.pick[value='{seeded['faster']}']").check()
    expect(button).to_be_enabled()
    button.click()
    expect(page.get_by_role("heading", name="Compare two kernels")).to_be_visible()
    expect(page.locator("#delta-ratio")).to_have_text("4.000×")
    expect(page.locator("#compare-diff table.diff tr")).not_to_have_count(0)
    expect(page.locator(".compare-heads")).to_contain_text("seed kernel")
    expect(page.locator(".compare-heads")).to_contain_text("faster kernel")
