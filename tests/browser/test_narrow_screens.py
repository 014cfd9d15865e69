"""Phones and long lines: at 420 px no list page scrolls sideways as a whole (wide
tables scroll inside their own box), the side-by-side diff turns unified below 800 px, and a
diff line longer than its column can be read in full. Screenshots go to the temp folder's
kernellab-narrow/ (outside test-results/, which pytest-playwright empties at each run), to look at."""

import re
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]

SHOTS = Path(tempfile.gettempdir()) / "kernellab-narrow"
# No spaces to break at: the worst a name can do to a table's width.
LONG = "Fused_LayerNorm_GELU_Residual_Dropout_" + "x" * 60


def seed_long_rows(stack) -> dict:
    """Every list page's rows, named as long as a person might name them, plus a worker with a
    long name and host and a suite holding the problem."""
    seeded = dashboard_seed.small_search(stack, LONG)
    more = dashboard_seed.run(stack, f"""
from django.utils import timezone
from evaluation.models import EvaluationJob, Worker
from searches.models import Problem, Search, Suite, SuiteProblem
p = Problem.objects.get(code={seeded['problem']!r})
suite = Suite.objects.create(name={LONG!r} + "_suite", created_by=owner)
SuiteProblem.objects.create(suite=suite, problem=p, level=1, number=1, file_name="level1/1_" + {LONG!r} + ".py")
Worker.objects.create(name="evaluator-" + {LONG!r}, host="gpu-host-" + {LONG!r}, pid=4242, device="cpu",
                      heartbeat_at=timezone.now())
for n in range(3):
    d.search(problem=p, created_by=owner, name=f"{{n}}_" + {LONG!r}, status="paused")
broken = d.kernel(problem=p, status="failed", name="failed_" + {LONG!r})
EvaluationJob.objects.create(problem=p, kernel=broken, status="failed", finished_at=timezone.now(),
                             last_error="killed its worker: " + {LONG!r} * 2)
from runs.models import Run, RunKernel
run = Run.objects.create(name="run_" + {LONG!r}, suite=suite, source="search", proposer="playbook",
                         model="model-" + {LONG!r}, created_by=owner)
RunKernel.objects.create(run=run, member=suite.members.get(), kernel=p.kernels.filter(status="correct").first())
out = dict(suite=str(suite.code), run=str(run.code))
""")
    return {**seeded, **more}


def scroll_width(page) -> int:
    return page.evaluate("document.scrollingElement.scrollWidth")


# The smallest text of the server-drawn charts on screen, in CSS px: its font size times the
# chart's scale (rendered width over viewBox width).
SMALLEST_CHART_TEXT = """() => Math.min(99, ...[...document.querySelectorAll("svg.chart text")]
  .filter(t => t.getClientRects().length)
  .map(t => parseFloat(getComputedStyle(t).fontSize) * t.ownerSVGElement.getBoundingClientRect().width
                                                     / t.ownerSVGElement.viewBox.baseVal.width))"""


def test_list_pages_fit_a_phone(logged_in_page, stack):
    seeded = seed_long_rows(stack)
    page = logged_in_page
    page.set_viewport_size({"width": 420, "height": 900})
    SHOTS.mkdir(parents=True, exist_ok=True)
    lists = {
        "problems": "/problems/", "searches": "/searches/", "workers": "/workers/", "failed-jobs": "/workers/jobs/cpu/failed/", "suites": "/suites/",
        "suite": f"/suites/{seeded['suite']}/", "suite-runs": f"/suites/{seeded['suite']}/runs/",
        "run": f"/runs/{seeded['run']}/", "leaderboards": "/leaderboards/",
        "leaderboard": f"/problems/{seeded['problem']}/leaderboard/", "problem": f"/problems/{seeded['problem']}/",
        "search": f"/searches/{seeded['search']}/", "kernel": f"/kernels/{seeded['faster']}/",
        "problem-searches": f"/searches/?problem={seeded['problem']}&versions=all",
        "search-form": f"/problems/{seeded['problem']}/search/new/",
        "kernel-form": f"/problems/{seeded['problem']}/kernels/new/?template=1",
    }
    too_wide, small_text, chart_texts = {}, {}, 0
    for name, url in lists.items():
        assert page.goto(url).status == 200, name
        page.wait_for_load_state("networkidle")
        assert LONG in page.content(), name  # the long rows are there to push the page
        page.screenshot(path=str(SHOTS / f"{name}-420.png"), full_page=True)
        width, inner = scroll_width(page), page.evaluate("innerWidth")
        if width > inner:
            too_wide[name] = width
        chart_texts += page.locator("svg.chart text").count()
        if page.evaluate(SMALLEST_CHART_TEXT) < 11:
            small_text[name] = page.evaluate(SMALLEST_CHART_TEXT)
    assert too_wide == {}, f"pages wider than the 420 px screen: {too_wide}"
    assert small_text == {}, f"chart text under 11 px: {small_text}"
    assert chart_texts > 0  # the search and kernel pages drew their charts


def long_line_pair(stack) -> dict:
    """Two kernels whose sources differ on one line far longer than a diff column."""
    return dashboard_seed.run(stack, """
p = d.problem(name="long line problem")
base = d.kernel(problem=p, name="short lines", median_ms=0.5)
tail = "  # " + " ".join(f"word{i}" for i in range(60)) + " END-OF-LONG-LINE"
other = d.kernel(problem=p, name="long line", median_ms=0.4,
                 source=base.source.replace("clamp_min(0)", "clamp_min(0)" + tail))
out = dict(a=str(base.code), b=str(other.code))
""")


def test_long_diff_line_readable_in_full_when_wrapped(logged_in_page, stack):
    pair = long_line_pair(stack)
    page = logged_in_page
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"/compare/?k={pair['a']}&k={pair['b']}")
    cell = page.locator("table.diff td.code.add", has_text="END-OF-LONG-LINE").first
    expect(cell).to_be_attached()
    # Scrolled by default: the line runs past its column, and nothing hides it behind "…".
    assert cell.evaluate("c => getComputedStyle(c).textOverflow") != "ellipsis"
    page.get_by_role("button", name="Wrap long lines").click()
    expect(page.get_by_role("button", name="Wrap long lines")).to_have_attribute("aria-pressed", "true")
    box = cell.bounding_box()
    # Wrapped: the whole line lies inside its cell, which sits inside the screen.
    assert cell.evaluate("c => c.scrollWidth <= c.clientWidth")
    assert box["x"] + box["width"] <= 1400 and box["height"] > 30
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "diff-wrapped-1400.png"), full_page=True)


def test_diff_is_unified_on_a_narrow_screen(logged_in_page, stack):
    pair = long_line_pair(stack)
    page = logged_in_page
    page.set_viewport_size({"width": 420, "height": 900})
    page.goto(f"/compare/?k={pair['a']}&k={pair['b']}")
    expect(page.locator("table.diff.unified")).to_be_visible()
    expect(page.locator("table.diff.split")).to_be_hidden()
    # One column of code: the removed line above the added one, each marked.
    expect(page.locator("table.diff.unified tr.del").first).to_be_visible()
    expect(page.locator("table.diff.unified tr.add", has_text="END-OF-LONG-LINE")).to_be_visible()
    assert scroll_width(page) <= 420
    expect(page.get_by_role("heading", name=re.compile("^Source, one column"))).to_be_visible()
    # A phone starts wrapped (its column holds few characters) until the reader chooses.
    expect(page.get_by_role("button", name="Wrap long lines")).to_have_attribute("aria-pressed", "true")
    line = page.locator("table.diff.unified tr.add td.code", has_text="END-OF-LONG-LINE")
    assert line.evaluate("c => c.scrollWidth <= c.clientWidth")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "diff-unified-420.png"), full_page=True)
    page.set_viewport_size({"width": 1000, "height": 900})
    expect(page.get_by_role("heading", name=re.compile("^Source, side by side"))).to_be_visible()
    expect(page.locator("table.diff.split")).to_be_visible()
    expect(page.locator("table.diff.unified")).to_be_hidden()


@pytest.mark.parametrize("width", (900, 1400))
def test_chart_text_stays_readable_at_wider_screens(logged_in_page, stack, width):
    seeded = dashboard_seed.small_search(stack, f"charts at {width}")
    page = logged_in_page
    page.set_viewport_size({"width": width, "height": 900})
    for url in (f"/searches/{seeded['search']}/", f"/kernels/{seeded['faster']}/"):
        page.goto(url)
        page.wait_for_load_state("networkidle")
        assert page.locator("svg.chart text").count() > 0, url
        assert page.evaluate(SMALLEST_CHART_TEXT) >= 11, url
        assert scroll_width(page) <= width, url
