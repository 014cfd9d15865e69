"""The lineage view in a real browser against the real stack: a 2,000-kernel search is drawn
whole, follows a verdict written by another process, and two picked nodes open the compare page."""

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def write_verdict(stack, search_id: int, idea_id: int) -> dict:
    """Another process adds a waiting kernel, gives it the fastest correct verdict yet, then an idea."""
    return dashboard_seed.run(stack, f"""
from django.db import transaction
from searches.services import events
from searches.models import Idea, Search
s = Search.objects.get(pk={search_id})
idea = Idea.objects.get(pk={idea_id})
k = d.kernel(problem=s.problem, search=s, idea=idea, parent=idea.parent_kernel, round=idea.round, status="pending",
             name="live verdict", run=False, publish=True)
with transaction.atomic():
    k.status, k.median_ms, k.speedup_vs_eager, k.speedup_vs_compile = "correct", 0.01, 100.0, 80.0
    k.save()
    events.publish_kernel(k, "kernel.updated")
follow_up = d.idea(search=s, parent_kernel=k, title="Unroll it further", round=idea.round + 1, publish=True)
out = dict(id=k.id, idea=follow_up.id)
""")


def click_node(page, key: str) -> None:
    """A real mouse click where the node is drawn (a dot has no box of its own to aim at), once
    nothing else is drawn there (a live redraw can move the picture under the pointer)."""
    page.wait_for_function("""key => {
        const node = document.getElementById("ln-" + key);
        if (!node) return false;
        const r = node.getBoundingClientRect();
        const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
        return hit !== null && (hit === node || node.contains(hit));
    }""", arg=key)
    page.mouse.click(*node_centre(page, key))


def node_centre(page, key: str) -> tuple[float, float]:
    return page.locator(f"#ln-{key}").evaluate(
        "e => { const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }")


def test_a_2000_kernel_lineage_draws_every_node_follows_live_and_compares(logged_in_page, stack):
    seeded = dashboard_seed.big_search(stack)
    assert seeded["kernels"] == 2000
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/lineage/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#lineage-svg .kn")).to_have_count(2000)
    expect(page.locator("#lineage-svg .in")).to_have_count(seeded["ideas"])  # ideas between kernels
    assert page.locator("#lineage-svg .e.best").count() >= 1  # the path to the best kernel
    expect(page.locator("#lineage-count")).to_have_text(f"2000 kernels · {seeded['ideas']} ideas")

    # Hover shows what produced a kernel.
    page.mouse.move(*node_centre(page, f"k{seeded['child']}"))
    expect(page.locator("#lineage-tip")).to_be_visible()
    expect(page.locator("#lineage-tip")).to_contain_text("Idea")

    # Live: a verdict written by another process recolours its node and moves the best path.
    live = write_verdict(stack, seeded["search_id"], seeded["idea"])
    node = page.locator(f"#ln-k{live['id']}")
    expect(node).to_have_class("kn s-correct best", timeout=5000)
    expect(page.locator("#lineage-svg .kn")).to_have_count(2001)
    expect(page.locator("#lineage-best")).to_contain_text("live verdict")
    expect(page.locator(f"#ln-i{live['idea']}")).to_have_count(1)  # a live idea, under its kernel
    assert node_centre(page, f"i{live['idea']}")[0] > node_centre(page, f"k{live['id']}")[0]

    # Collapse a branch: the seed's first idea folds its kernels away, and back.
    click_node(page, f"i{seeded['idea']}")
    expect(page.locator("#lineage-svg .kn")).not_to_have_count(2001)
    page.locator("#lineage-expand").click()
    expect(page.locator("#lineage-svg .kn")).to_have_count(2001)

    # Pick two nodes and compare them.
    click_node(page, f"k{seeded['seed']}")
    page.locator("#lineage-pick").click()
    click_node(page, f"k{seeded['child']}")
    page.locator("#lineage-pick").click()
    page.locator("#lineage-compare").click()
    page.wait_for_url("**/compare/?*")
    assert seeded["seed_code"] in page.url and seeded["child_code"] in page.url
    expect(page.locator("h1")).to_contain_text("Compare")


def test_lineage_shows_repairs_and_opens_a_kernel_page(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "lineage small")
    # seed -> idea -> (fast, broken); fast -> idea -> faster (the best); broken -> its repair.
    repair = dashboard_seed.run(stack, f"""
from searches.models import Kernel
broken = Kernel.objects.get(code={seeded['broken']!r})
k = d.kernel(problem=broken.problem, search=broken.search, idea=broken.idea, parent=broken.parent, origin="repair",
             repair_of=broken, status="incorrect", name="repair of broken", publish=True)
out = dict(id=k.id, broken=broken.id)
""")
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/lineage/")
    expect(page.locator("#live-state")).to_have_text("live")  # the replayed events are drawn
    expect(page.locator("#lineage-svg .kn")).to_have_count(5)
    expect(page.locator("#lineage-svg .kn.best")).to_have_count(3)
    # The repair hangs from the kernel it repairs, on an edge of its own kind.
    expect(page.locator("#lineage-svg .e.repair")).to_have_count(1)
    broken_x = page.locator(f"#ln-k{repair['broken']}").evaluate("e => e.getBoundingClientRect().x")
    repair_x = page.locator(f"#ln-k{repair['id']}").evaluate("e => e.getBoundingClientRect().x")
    assert repair_x > broken_x
    page.mouse.move(*node_centre(page, f"k{repair['id']}"))
    expect(page.locator("#lineage-tip")).to_contain_text("a fix of a kernel that did not compile")
    # Keys zoom the focused picture; shift-click picks kernels for comparison.
    before = page.locator("#lineage-view").get_attribute("transform")
    page.locator("#lineage-svg").focus()
    page.keyboard.press("-")
    assert page.locator("#lineage-view").get_attribute("transform") != before
    page.keyboard.press("0")
    expect(page.locator("#lineage-view")).to_have_attribute("transform", before)
    page.keyboard.down("Shift")
    click_node(page, f"k{repair['broken']}")
    # The selection opens the side panel, which can move the picture: aim once it has been redrawn.
    expect(page.locator("#lineage-picked")).to_contain_text("1 of 2 picked")
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    click_node(page, f"k{repair['id']}")
    page.keyboard.up("Shift")
    expect(page.locator("#lineage-compare")).to_be_enabled()
    click_node(page, f"k{seeded['fast_id']}")
    expect(page.locator("#lineage-panel")).to_contain_text("Vectorise the loads")
    page.locator("#lineage-open").click()
    page.wait_for_url(f"**/kernels/{seeded['fast']}/")
