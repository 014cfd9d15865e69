"""Screenshots of the main pages at a desktop and a phone width, into test-results/screenshots/
(ignored by git) for people to look at; and at 420 px no page is wider than the screen (tables
scroll inside their own box). pytest-playwright empties test-results/ when a run starts, so the
folder holds the last run's pictures."""

from pathlib import Path

import pytest

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]

SHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"
WIDTHS = (1400, 420)


def pages(seeded) -> dict[str, str]:
    return {
        "search": f"/searches/{seeded['search']}/",
        "lineage": f"/searches/{seeded['search']}/lineage/",
        "kernel": f"/kernels/{seeded['faster']}/",
        "compare": f"/compare/?k={seeded['fast']}&k={seeded['faster']}",
        "leaderboard": f"/problems/{seeded['problem']}/leaderboard/",
        "kernel-format": "/docs/kernel-format/",
        "not-found": "/s/revoked-or-never-made/",
    }


@pytest.mark.parametrize("width", WIDTHS)
def test_screenshots_and_no_sideways_scrolling(logged_in_page, stack, width):
    seeded = dashboard_seed.small_search(stack, f"screenshot search {width}")
    dashboard_seed.board_extras(stack, seeded)
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    SHOTS.mkdir(parents=True, exist_ok=True)
    too_wide = {}
    for name, url in pages(seeded).items():
        response = page.goto(url)
        assert response.status == (404 if name == "not-found" else 200), (name, response.status)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        if scroll_width > width:
            too_wide[name] = scroll_width
    assert too_wide == {}, f"pages wider than the {width} px screen: {too_wide}"


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_lineage_of_a_2000_kernel_search(logged_in_page, stack, width):
    seeded = dashboard_seed.big_search(stack)
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(f"/searches/{seeded['search']}/lineage/")
    page.wait_for_function("() => document.body.dataset.lineageDrawnMs")
    page.screenshot(path=str(SHOTS / f"lineage-2000-{width}.png"))
    page.locator("#lineage-fit").click()  # the whole search at a glance
    page.screenshot(path=str(SHOTS / f"lineage-2000-all-{width}.png"))
    assert page.evaluate("document.documentElement.scrollWidth") <= width
