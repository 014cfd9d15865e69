"""The Lessons page in chromium: a proposed lesson reworded and approved, another rejected, the
filters, the decision shown with who made it; screenshots at a desktop and a phone width into
test-results/screenshots/ for people to look at, and no sideways scrolling at 420 px."""

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed
from tests.browser.test_screenshots import SHOTS

pytestmark = [pytest.mark.e2e]


def seed_lessons(stack) -> dict:
    seeded = dashboard_seed.small_search(stack, "lessons search")
    return dashboard_seed.run(stack, f"""
from memory import services as memory
from searches.models import Kernel, Search
from searches.selectors.memory_scope import search_key
s = Search.objects.select_related("problem").get(pk={seeded['search_id']})
s.problem.family = "relu"
s.problem.save(update_fields=["family"])
broken = Kernel.objects.get(code={seeded['broken']!r})
broken.device_name = "NVIDIA H200"  # as the runner reports it with every verdict
broken.save(update_fields=["device_name"])
key = search_key(s, kernel=broken)
first = memory.lesson_propose(text="NVRTC has no <math.h>: use the built-in expf and fmaxf, include nothing.",
                              key=key, search_id=s.id, kernel_id=broken.id, verdict="compile_error")
second = memory.lesson_propose(text="Always unroll every loop by 16.", key=key, search_id=s.id,
                               kernel_id=broken.id, verdict="compile_error")
old = memory.lesson_propose(text="Declare every helper __device__ __forceinline__: NVRTC compiles one unit.",
                            key=key, search_id=s.id, kernel_id=None, verdict="compile_error")
memory.lesson_approve(lesson=old, user=owner)
d.kernel(problem=s.problem, search=s, round=3, median_ms=0.2, name="judged after the approval")
out = dict(first=str(first.code), second=str(second.code), old=str(old.code))
""")


def test_approve_edit_reject_and_filter_on_the_lessons_page(logged_in_page, stack):
    seeded = seed_lessons(stack)
    page = logged_in_page
    page.get_by_role("link", name="Lessons").click()
    expect(page.get_by_role("heading", name="Lessons")).to_be_visible()
    first = page.locator(f"#lesson-{seeded['first']}")
    expect(first).to_contain_text("Proposed")
    expect(first).to_contain_text("compile_error")
    expect(first).to_contain_text("broken kernel")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lessons-1400.png"), full_page=True)

    first.get_by_label("The lesson's words").fill("NVRTC has no <math.h>: use expf and fmaxf, include nothing.")
    first.get_by_role("button", name="Approve").click()
    first = page.locator(f"#lesson-{seeded['first']}")
    expect(page.locator(".messages")).to_contain_text("Approved: it now enters the prompts")
    expect(first).to_contain_text("Approved by e2e")
    expect(first.locator(".lesson-text")).to_have_text("NVRTC has no <math.h>: use expf and fmaxf, include nothing.")
    expect(first).to_contain_text("The model's words: “NVRTC has no <math.h>: use the built-in expf")
    expect(first.get_by_role("button", name="Approve")).to_have_count(0)

    page.locator(f"#lesson-{seeded['second']}").get_by_role("button", name="Reject").click()
    expect(page.locator(f"#lesson-{seeded['second']}")).to_contain_text("Rejected by e2e")

    page.locator("#lesson-filters select[name=status]").select_option("approved")
    page.locator("#lesson-filters").get_by_role("button", name="Filter").click()
    expect(page.locator(f"#lesson-{seeded['first']}")).to_be_visible()
    # Before its approval 1 of the search's 4 kernels failed to compile; the one judged since did not.
    expect(page.locator(f"#lesson-{seeded['old']}")).to_contain_text(
        "25% before approval (1 of 4 kernels judged) → 0% after (0 of 1) went down")
    expect(page.locator(f"#lesson-{seeded['second']}")).to_have_count(0)
    page.screenshot(path=str(SHOTS / "lessons-approved-1400.png"), full_page=True)

    page.set_viewport_size({"width": 420, "height": 900})
    page.goto("/lessons/")
    page.screenshot(path=str(SHOTS / "lessons-420.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 420
