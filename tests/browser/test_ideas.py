"""The Ideas page in a browser: a seeded team history shows in its technique × family table, a cell opens
the kernels behind it, and the page is photographed (test-results/screenshots/ideas-*.png)."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]
SHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"


def seed_history(stack, family: str) -> dict:
    """Three tagged ideas on one problem of `family` (each test its own family: the stack outlives a test)."""
    return dashboard_seed.run(stack, f"""
from searches.models import Idea, ProposerCall
p = d.problem(name="Ideas page {family}", family="{family}", device="cuda", min_bytes=1e6)
s = d.search(problem=p, created_by=owner, name="ideas page search", status="completed", device="cuda")
seed = d.kernel(problem=p, search=s, round=0, median_ms=1.0, name="ideas seed")
made = []
for title, technique, ms, expected in (("One warp per row", "warp-reductions", 0.5, 1.8),
                                       ("float4 loads", "vectorised-loads", 0.8, 1.3),
                                       ("wmma tiles", "tensor-cores", None, 2.5)):
    call = ProposerCall.objects.create(search=s, purpose="ideas", proposer="anthropic", model="claude-opus-4-6",
                                       cost_usd=0.02)
    idea = d.idea(search=s, parent_kernel=seed, title=title)
    Idea.objects.filter(pk=idea.pk).update(technique=technique, origin="llm", call=call, expected_speedup=expected)
    k = d.kernel(problem=p, search=s, idea=idea, parent=seed, median_ms=ms or 1.0, name=title + " kernel",
                 status="correct" if ms else "compile_error")
    made.append(k.id)
out = dict(search=str(s.code), kernels=made)
""")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_ideas_page_shows_the_teams_history_and_opens_a_cells_kernels(logged_in_page, stack, width):
    family = f"softmax{width}"
    seed_history(stack, family)
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/")
    if width > 600:
        page.locator("header nav a", has_text="Ideas").click()
    else:
        page.goto("/ideas/")
    expect(page.locator("h1")).to_have_text("Ideas")
    cell = page.locator(f'td.cell[data-technique="warp-reductions"][data-family="{family}"]')
    expect(cell.locator(".attempts")).to_have_text("1/1")
    expect(cell.locator(".median")).to_have_text("2.00x")
    expect(page.locator(f'td.cell[data-technique="tensor-cores"][data-family="{family}"] .attempts')).to_have_text("0/1")
    expect(page.locator("#calibration")).to_contain_text("claude-opus-4-6")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"ideas-{width}.png"), full_page=True)
    cell.locator("a").click()
    expect(page.locator("h1")).to_have_text(f"warp-reductions on {family}")
    expect(page.locator("#cell-kernels")).to_contain_text("One warp per row kernel")
