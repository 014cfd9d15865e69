"""Nothing on the search page goes stale: another process makes every kind of change a search
goes through (a new idea, a kernel and its verdict, a verified rerun, a new status and round,
progress, the start and the finish); each one shows up live, and at the end the live page and
a fresh load agree field by field."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

INSIGHTS_WAIT_MS = 8000  # the page fetches its server-drawn parts at most every 2 s

# Everything a person reads on the page that a change can move, as {field: text}.
SNAPSHOT_JS = """() => {
  const text = (sel) => { const e = document.querySelector(sel); return e ? (e.hidden ? "[hidden]" : e.textContent.trim()) : null; };
  const out = {};
  for (const id of ["search-status", "kernel-count", "kernel-count-noun", "idea-count", "idea-count-noun",
                    "p-evaluated", "p-round", "p-tokens", "p-cost", "p-elapsed", "best-line", "stop-reason"]) {
    out[id] = text("#" + id);
  }
  out["progress-value"] = document.getElementById("progress-bar").value;
  document.querySelectorAll("#tree-root li.i").forEach((li) => {
    out["idea " + li.id] = li.querySelector(":scope > .row").textContent.trim() + (li.classList.contains("best") ? " [best]" : "");
  });
  document.querySelectorAll("#tree-root li.k").forEach((li) => {
    const row = li.querySelector(":scope > .row");
    const parts = Array.from(row.children).filter((c) => !c.matches("input")).map((c) => c.textContent.trim()).filter(Boolean);
    out["kernel " + li.id] = li.className + " | " + parts.join(" | ") + " | under " + li.parentElement.closest("li")?.id;
  });
  for (const id of ["filter-status", "filter-round"]) {
    out[id] = Array.from(document.getElementById(id).options).map((o) => o.value + "=" + o.textContent).join(", ");
  }
  out["provenance"] = text("#provenance tbody") || text("#provenance");
  out["idea-stats"] = text("#idea-stats tbody");
  out["buttons"] = Array.from(document.querySelectorAll("form[data-when]")).map((f) => f.hidden ? "-" : "+").join("");
  return out;
}"""


def change(stack, body: str) -> dict:
    return dashboard_seed.run(stack, """
from django.db import transaction
from searches.services import events
from searches.engine.records import set_status
from searches.models import BenchmarkRun, Idea, Kernel, Search
""" + body)


def test_every_change_arrives_live_and_the_page_matches_a_fresh_load(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "nothing stale")
    sid = seeded["search_id"]
    change(stack, f"Search.objects.filter(pk={sid}).update(started_at=None)\nout = {{}}")
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/")
    expect(page.locator("#live-state")).to_have_text("live")
    expect(page.locator("#p-elapsed")).to_have_text("not started")
    expect(page.locator("#best-line")).to_contain_text("0.2500 ms")

    # A new idea under the best kernel.
    idea = change(stack, f"""
s = Search.objects.get(pk={sid})
i = d.idea(search=s, parent_kernel=s.kernels.get(name="faster kernel"), title="Use shared memory", round=3, publish=True)
out = dict(id=i.id)
""")["id"]
    expect(page.locator(f"#i-{idea} > .row .title")).to_have_text("Use shared memory")
    expect(page.locator("#idea-count")).to_have_text("3")

    # A waiting kernel under it, then its verdict: the fastest yet, measured on another GPU.
    kernel = change(stack, f"""
s = Search.objects.get(pk={sid})
k = d.kernel(problem=s.problem, search=s, idea=Idea.objects.get(pk={idea}), parent=s.kernels.get(name="faster kernel"),
             round=3, status="pending", run=False, name="shared-memory kernel", publish=True)
out = dict(id=k.id)
""")["id"]
    expect(page.locator(f"#k-{kernel}")).to_contain_text("Waiting")
    change(stack, f"""
k = Kernel.objects.get(pk={kernel})
with transaction.atomic():
    k.status, k.median_ms, k.speedup_vs_eager, k.speedup_vs_compile, k.precision = "correct", 0.125, 8.0, 6.4, "fp32"
    k.device_name = "NVIDIA H100"
    k.save()
    BenchmarkRun.objects.create(kernel=k, status="correct", median_ms=0.125, device_name="NVIDIA H100",
                                environment={{**d.ENV, "device_name": "NVIDIA H100", "runner_version": "2"}})
    events.publish_kernel(k, "kernel.updated")
out = {{}}
""")
    expect(page.locator(f"#k-{kernel}")).to_contain_text("Correct")
    expect(page.locator("#best-line")).to_have_text("Best: 0.1250 ms · 8.00× eager · 6.40× compile")
    expect(page.locator(f"#k-{kernel}")).to_have_class(re.compile(r"\bbest\b"))
    expect(page.locator(f"#i-{idea} > .row .rate")).to_have_text("1/1 correct")
    expect(page.locator("#provenance")).to_contain_text("NVIDIA H100", timeout=INSIGHTS_WAIT_MS)
    expect(page.locator("#idea-stats")).to_contain_text("Use shared memory", timeout=INSIGHTS_WAIT_MS)

    # A verified rerun of an older kernel, and a verdict of a status and round not seen before.
    late = change(stack, f"""
s = Search.objects.get(pk={sid})
fast = s.kernels.get(name="fast kernel")
with transaction.atomic():
    fast.verified = True
    fast.save()
    events.publish_kernel(fast, "kernel.updated")
k = d.kernel(problem=s.problem, search=s, idea=Idea.objects.get(pk={idea}), parent=s.kernels.get(name="faster kernel"),
             round=4, status="timeout", name="slow to build", publish=True)
out = dict(id=k.id)
""")["id"]
    expect(page.locator(f"#k-{seeded['fast_id']} > .row > .vb")).to_have_text("verified rerun")
    expect(page.locator(f"#k-{late}")).to_contain_text("Timed out")
    expect(page.locator("#filter-status option[value=timeout]")).to_have_count(1)
    expect(page.locator("#filter-round option[value='4']")).to_have_count(1)
    expect(page.locator(f"#i-{idea} > .row .rate")).to_have_text("1/2 correct")

    # The round, the counters, the start and the finish.
    change(stack, f"""
with transaction.atomic():
    Search.objects.filter(pk={sid}).update(current_round=4, candidates_evaluated=6, tokens_in=1200, tokens_out=345,
                                           cost_usd=0.0123)
    events.publish({sid}, "round.started", {{"round": 4}})
    events.publish_search_progress({sid})
set_status({sid}, "running")
out = {{}}
""")
    expect(page.locator("#p-round")).to_have_text("4")
    expect(page.locator("#p-evaluated")).to_have_text("6")
    expect(page.locator("#p-tokens")).to_have_text("1545")
    expect(page.locator("#search-status")).to_have_text("Running")
    expect(page.locator("#p-elapsed")).to_have_text(re.compile(r"^\d+ s$"))
    final = change(stack, f"""
set_status({sid}, "completed", "All 4 rounds done.")
out = dict(seq=last_seq(SEARCH, {sid}))
""")
    expect(page.locator("#search-status")).to_have_text("Completed")
    expect(page.locator("#stop-reason")).to_have_text("All 4 rounds done.")
    expect(page.locator("body")).to_have_attribute("data-live-seq", str(final["seq"]))
    page.wait_for_timeout(INSIGHTS_WAIT_MS // 2)  # the last insights fetch lands

    live = page.evaluate(SNAPSHOT_JS)
    page.reload()
    fresh = page.evaluate(SNAPSHOT_JS)
    assert live.keys() == fresh.keys()
    for field in fresh:
        assert live[field] == fresh[field], field
