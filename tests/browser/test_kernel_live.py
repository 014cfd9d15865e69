"""A hand-submitted kernel's page follows its evaluation (queue place, then time evaluating) and
shows the verdict without a reload, through the real worker (static/js/kernel_live.js)."""

import re

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]

VERDICT_TIMEOUT_MS = 240_000  # the sandboxes' first start and a C build, on two shared cores


def test_a_kernel_page_reaches_its_verdict_without_a_reload(logged_in_page, stack):
    seeded = dashboard_seed.run(stack, """
p = d.problem(name="live relu")
out = dict(problem=str(p.code))
""")
    page = logged_in_page
    blocked = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(f"/problems/{seeded['problem']}/kernels/new/?template=1")
    source = page.get_by_label("Kernel source (a module defining ModelNew)")
    source.fill(source.input_value().replace("out[i] = x[i];", "out[i] = x[i] > 0.0f ? x[i] : 0.0f;"))
    page.get_by_label("Name").fill("live relu kernel")
    page.get_by_role("button", name="Submit for evaluation").click()
    expect(page.get_by_role("heading", name="live relu kernel")).to_be_visible()
    page.wait_for_load_state("load")
    page.evaluate("window.sameDocument = true")  # a reload would lose it
    progress = page.locator("#kernel-progress")
    expect(progress).to_have_text(re.compile(r"Position \d|Evaluating for|an idle evaluator|Waiting"))
    expect(page.locator("#kernel-status")).to_have_text("Correct", timeout=VERDICT_TIMEOUT_MS)
    expect(progress).to_have_count(0)
    expect(page.locator("#verdict")).to_contain_text(re.compile(r"\d ms"))
    assert page.evaluate("window.sameDocument === true")  # swapped in place, no reload
    assert blocked == []  # and no inline script
