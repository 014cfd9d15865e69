"""The search page in a real browser against the real stack: a search started from the form
grows live, and a page that lost its connection catches up with nothing missing or doubled."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed
from tests.searches.problem_samples import SOFTMAX

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

VALIDATION_TIMEOUT_S = 300  # torch.compile's first CPU build is slow on two cores
EVALUATION_TIMEOUT_MS = 240_000


def validated_softmax(stack) -> str:
    return dashboard_seed.run(stack, f"""
import time
from searches import services
from searches.models import Problem
problem = services.problem_create(user=owner, name="Softmax for a live search", source={SOFTMAX!r}, device="cpu")
deadline = time.monotonic() + {VALIDATION_TIMEOUT_S}
while time.monotonic() < deadline:
    problem.refresh_from_db()
    if problem.validation_status not in ("pending", "running"):
        break
    time.sleep(1)
assert problem.validation_status == "ok", (problem.validation_status, problem.validation_reason)
out = dict(code=str(problem.code))
""")["code"]


def test_start_a_search_and_watch_nodes_appear_live(logged_in_page, stack):
    code = validated_softmax(stack)
    page = logged_in_page
    page.goto(f"/problems/{code}/search/new/")
    page.get_by_label("Rounds (R)").fill("1")
    page.get_by_label("Parents per round (B)").fill("1")
    page.get_by_label("Ideas per parent (I)").fill("1")
    page.get_by_label("Kernels per idea (K)").fill("1")
    page.get_by_label("Budget: candidates").fill("3")
    page.get_by_role("button", name="Start search").click()
    expect(page.locator("#live-state")).to_have_text("live")
    served_seq = int(page.locator("body").get_attribute("data-live-seq"))
    # Nodes arrive over the websocket, without a reload: a kernel gets a final verdict.
    final = page.locator("#tree-root li.k:not(.s-pending):not(.s-evaluating)")
    expect(final.first).to_be_visible(timeout=EVALUATION_TIMEOUT_MS)
    assert int(page.locator("body").get_attribute("data-live-seq")) > served_seq
    expect(page.locator("#p-evaluated")).not_to_have_text("0", timeout=EVALUATION_TIMEOUT_MS)
    # Every node the live page built is in a fresh render from the database (which may have more by now).
    live_nodes = set(page.locator("#tree-root li").evaluate_all("els => els.map(e => e.id)"))
    page.reload()
    fresh = set(page.locator("#tree-root li").evaluate_all("els => els.map(e => e.id)"))
    assert live_nodes and live_nodes <= fresh


def test_a_reconnect_misses_nothing(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "reconnect search")
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#tree-root li.k")).to_have_count(4)

    # Live: another process adds a kernel; it shows up without a reload.
    added = dashboard_seed.add_kernels(stack, seeded["search_id"], seeded["i2"], ["live one"])
    expect(page.locator(f"#k-{added['ids'][0]}")).to_contain_text("live one", timeout=3000)

    # Offline: the page drops its connection while a new idea and three kernels are written.
    page.evaluate("() => window.kernelLabLive.pause()")
    expect(page.locator("#live-state")).to_have_text("paused")
    missed = dashboard_seed.add_kernels(stack, seeded["search_id"], seeded["i2"], ["missed a", "missed b", "missed c"],
                                        title="Written while offline")
    page.wait_for_timeout(700)
    expect(page.locator("#tree-root li.k")).to_have_count(5)  # nothing arrived while offline
    page.evaluate("() => window.kernelLabLive.resume()")
    expect(page.locator("#tree-root li.k")).to_have_count(8)
    expect(page.locator(f"#i-{missed['idea']}")).to_contain_text("Written while offline")
    for kernel_id in missed["ids"]:
        expect(page.locator(f"#i-{missed['idea']} #k-{kernel_id}")).to_have_count(1)
    expect(page.locator("body")).to_have_attribute("data-live-seq", str(missed["seq"]))
    assert page.evaluate("() => window.kernelLabLive.applied") == missed["seq"] - seeded["seq"]

    # A reconnect that asks for events the page already has changes nothing (duplicates ignored).
    page.evaluate("() => { window.kernelLabLive.lastSeq = 0; window.kernelLabLive.reconnect(); }")
    expect(page.locator("#live-state")).to_have_text("live")
    page.wait_for_timeout(700)
    expect(page.locator("#tree-root li.k")).to_have_count(8)
    expect(page.locator("#tree-root li.i")).to_have_count(3)


def test_live_text_is_inserted_inert(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "xss over websocket")
    page = logged_in_page
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"/searches/{seeded['search']}/")
    expect(page.locator("#live-state")).to_have_text("live")
    payload = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    added = dashboard_seed.add_kernels(stack, seeded["search_id"], seeded["i2"], [payload], title=payload)
    idea = page.locator(f"#i-{added['idea']} > .row .title")
    expect(idea).to_have_text(payload)
    expect(page.locator(f"#k-{added['ids'][0]} > .row a")).to_have_text(payload)
    assert page.locator("#tree-root img, #tree-root script").count() == 0
    page.wait_for_timeout(300)
    assert dialogs == []


def test_filter_and_fold_the_tree(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "filter search")
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/")
    page.locator("#filter-status").select_option("compile_error")
    expect(page.locator("#tree-root li[id^=k-]:visible")).to_have_count(2)  # the match and its parent
    expect(page).to_have_url(re.compile(r"status=compile_error"))
    page.locator("#filter-status").select_option("")
    expect(page.locator("#tree-root li.k:visible")).to_have_count(4)
    page.locator(f"#k-{seeded['fast_id']} > .row > i.m").click()  # fold what grew from "fast kernel"
    expect(page.locator("#tree-root li.k:visible")).to_have_count(3)


def test_status_changes_arrive_live_and_the_buttons_follow(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "controls search", status="running")
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#btn-pause")).to_be_visible()
    expect(page.locator("#btn-resume")).to_be_hidden()
    dashboard_seed.run(stack, f"""
from searches import services
from searches.models import Search
services.search_pause(search=Search.objects.get(pk={seeded['search_id']}), user=owner)
out = {{}}
""")
    expect(page.locator("#search-status")).to_have_text("Paused")
    expect(page.locator("#btn-pause")).to_be_hidden()
    expect(page.locator("#btn-resume")).to_be_visible()
    # The playbook cannot serve this problem (no recognised family): resuming says so.
    page.locator("#btn-resume").click()
    expect(page.locator(".messages")).to_contain_text("Could not resume the search")
    # Cancel asks first: saying no leaves the search as it was.
    questions = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.locator("#btn-cancel").click()
    page.wait_for_timeout(500)
    expect(page.locator("#search-status")).to_have_text("Paused")
    assert questions and questions[0].startswith("Cancel this search?")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#btn-cancel").click()
    expect(page.locator("#search-status")).to_have_text("Cancelled")
    expect(page.locator("#btn-cancel")).to_be_hidden()


def test_chart_and_idea_table_follow_new_verdicts(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "insights search")
    page = logged_in_page
    blocked = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"/searches/{seeded['search']}/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#chart-card svg.chart")).to_be_visible()
    expect(page.locator("#chart-card svg.chart text", has_text="R3")).to_have_count(0)
    dashboard_seed.add_kernels(stack, seeded["search_id"], seeded["i2"], ["round three kernel"], title="Split the work")
    # Without a reload: the ideas table gains the new idea and the chart a third round.
    expect(page.locator("#idea-stats")).to_contain_text("Split the work", timeout=5000)
    expect(page.locator("#chart-card svg.chart text", has_text="R3")).to_have_count(1)
    assert blocked == []
