"""Small things a new user trips on, in a real browser against the real stack: the
kernel form's template reaches a correct verdict through the worker, its syntax check answers at
once, notes after an action go away, and a cancelled search's queued kernel is grey, not failed."""

import re
import tempfile
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]

SHOTS = Path(tempfile.gettempdir()) / "kernellab-narrow"  # as test_narrow_screens' screenshots
VERDICT_TIMEOUT_S = 240  # the sandboxes' first start and a C build, on two shared cores


def test_kernel_form_template_syntax_check_and_verdict(logged_in_page, stack):
    seeded = dashboard_seed.run(stack, """
p = d.problem(name="template relu")
out = dict(problem=str(p.code))
""")
    page = logged_in_page
    page.goto(f"/problems/{seeded['problem']}/kernels/new/")
    expect(page.locator("#kernel-format-link")).to_have_attribute("href", "/docs/kernel-format/#kernel")
    source = page.get_by_label("Kernel source (a module defining ModelNew)")
    source.fill("class ModelNew(nn.Module)\n    pass\n")
    page.get_by_role("button", name="Submit for evaluation").click()
    expect(page.locator(".errorlist")).to_contain_text("Syntax error on line 1")

    page.get_by_role("link", name="Start from a template").click()
    template = source.input_value()
    assert "class ModelNew(nn.Module):" in template and "out[i] = x[i];" in template
    source.fill(template.replace("out[i] = x[i];", "out[i] = x[i] > 0.0f ? x[i] : 0.0f;"))
    page.get_by_label("Name").fill("relu from the template")
    page.get_by_role("button", name="Submit for evaluation").click()
    expect(page.get_by_role("heading", name="relu from the template")).to_be_visible()
    note = page.locator(".messages li", has_text="Kernel submitted")
    expect(note).to_be_visible()
    expect(note).to_have_count(0, timeout=12_000)  # notes expire; errors would stay

    deadline = time.monotonic() + VERDICT_TIMEOUT_S
    while page.locator("#kernel-status").inner_text() in ("Waiting", "Evaluating") and time.monotonic() < deadline:
        time.sleep(3)
        page.reload()
    expect(page.locator("#kernel-status")).to_have_text("Correct")


def test_a_cancelled_searchs_queued_kernel_is_grey(logged_in_page, stack):
    seeded = dashboard_seed.small_search(stack, "to be cancelled")
    queued = dashboard_seed.run(stack, f"""
from evaluation import queue
from searches.models import Kernel, Search
s = Search.objects.get(pk={seeded['search_id']})
k = d.kernel(problem=s.problem, search=s, idea=s.ideas.last(), parent=s.kernels.get(name="fast kernel"),
             round=2, status="pending", name="waits in the queue", publish=True)
job = queue.enqueue_kernel(k)
job.device = "cuda"  # no CUDA worker here: it stays queued until the cancel drops it
job.save()
out = dict(id=k.id)
""")
    page = logged_in_page
    page.goto(f"/searches/{seeded['search']}/")
    row = page.locator(f"#k-{queued['id']} > .row")
    expect(row).to_contain_text("Waiting")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#btn-cancel").click()
    expect(page.locator("#search-status")).to_have_text("Cancelled")
    expect(row).to_contain_text("Not evaluated (cancelled)")
    expect(page.locator(f"#k-{queued['id']}")).to_have_class(re.compile(r"\bs-cancelled\b"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "cancelled-1400.png"), full_page=True)
    page.goto("/workers/")
    failed = page.get_by_role("link", name="CUDA GPU failed (24 h): 0")
    expect(failed).to_be_visible()
    failed.click()
    expect(page.get_by_role("heading", name=re.compile("jobs: failed"))).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("waits in the queue")
