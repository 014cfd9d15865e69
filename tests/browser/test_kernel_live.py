"""A hand-submitted kernel's page follows its evaluation (queue place, then the phase the runner
reports and the time elapsed) on its problem's event stream, and shows the verdict without a
reload, through the real worker (static/js/kernel_live.js)."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import dashboard_seed

pytestmark = [pytest.mark.e2e]

SHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"
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
    expect(progress).to_have_text(re.compile(r"Position \d|an idle evaluator|Waiting| for \d+ s; "))
    expect(page.locator("body[data-live=open]")).to_have_count(1)  # the problem's stream: a kernel of no search
    # The runner's phases as they come: a C build on two shared cores is long enough to see one of them.
    expect(progress).to_have_text(re.compile(
        r"(Starting a sandbox|Compiling|Running the reference|Waiting for the device|Checking correctness|Timing|"
        r"Judging the outputs) "
        r"for \d+ (s|min); \d+ (s|min) since the run began"), timeout=VERDICT_TIMEOUT_MS)
    expect(page.locator("#queue-note")).to_have_count(0)  # its run began: the verdict section moved on too
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "kernel-evaluating-1400.png"))  # for people to look at
    expect(page.locator("#kernel-status")).to_have_text("Correct", timeout=VERDICT_TIMEOUT_MS)
    expect(progress).to_have_count(0)
    expect(page.locator("#verdict")).to_contain_text(re.compile(r"\d ms"))
    assert page.evaluate("window.sameDocument === true")  # swapped in place, no reload
    assert blocked == []  # and no inline script
    # Each phase's seconds, kept for the ETAs of the runs after it; the stream told each one.
    kept = dashboard_seed.run(stack, f"""
from evaluation.models import EvaluationJob
from live.models import ProblemEvent
job = EvaluationJob.objects.get(problem__code={seeded['problem']!r}, purpose="manual")
out = dict(seconds=job.phase_seconds, phase=job.phase,
           kinds=list(ProblemEvent.objects.filter(problem=job.problem).values_list("kind", flat=True)))
""")
    assert {"starting", "compiling", "checking", "timing", "judging"} <= set(kept["seconds"]), kept
    assert kept["phase"] == ""
    assert "job.phase" in kept["kinds"] and kept["kinds"][-1] == "kernel.updated", kept
