"""Two KernelBench runs folders re-judged as runs of one suite on the real stack, then compared in
the browser: the table per run and per problem, the fast_p curves and the speedup spread (SVG from
the server). A screenshot of the page is left beside the test's temporary files."""

import re

import pytest
from playwright.sync_api import expect

from tests.runner import sources

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SUITE = "Runs compared (e2e)"
PROBLEMS = {1: ("1_Softmax.py", sources.SOFTMAX_PROBLEM), 2: ("2_SiLU.py", sources.SILU_PROBLEM)}
WRONG_SILU = sources.SILU_KERNEL.replace("y[i] = x[i] / (1.0f + expf(-x[i]))", "y[i] = x[i]")
RUNS = {"model A": {(1, 0): sources.SOFTMAX_KERNEL, (2, 0): WRONG_SILU, (2, 1): sources.SILU_KERNEL},
        "model B": {(1, 0): sources.SOFTMAX_KERNEL, (2, 0): sources.SILU_KERNEL}}
DEADLINE_S = 400


def test_two_runs_of_one_suite_compared_with_their_fast_p_curves(logged_in_page, stack, tmp_path):
    level = tmp_path / "problems" / "level1"
    level.mkdir(parents=True)
    for name, source in PROBLEMS.values():
        (level / name).write_text(source)
    done = stack.manage("import_problems", str(level), "--suite", SUITE, "--device", "cpu")
    assert done.returncode == 0 and "2 accepted" in done.stdout, done.stdout + done.stderr
    for run, files in RUNS.items():
        folder = tmp_path / run
        folder.mkdir()
        for (number, sample), source in files.items():
            (folder / f"level_1_problem_{number}_sample_{sample}_kernel.py").write_text(source)
        done = stack.manage("rejudge", str(folder), "--suite", SUITE, "--name", run, "--user", stack.username)
        assert done.returncode == 0, done.stderr

    page = logged_in_page
    page.goto("/suites/")
    page.get_by_role("link", name=SUITE).click()
    page.locator("#suite-runs").click()
    for run in RUNS:
        page.get_by_label(f"compare {run}").check()
    page.get_by_role("button", name="Compare the chosen runs").click()
    page.wait_for_url(re.compile(r".*/runs/compare/\?runs=.*"))
    compare_url = page.url
    for _ in range(DEADLINE_S // 5):  # the page is drawn once per request: read again until all are judged
        if "not judged yet" not in page.content():
            break
        page.wait_for_timeout(5000)
        page.goto(compare_url)
    assert "not judged yet" not in page.content()

    expect(page.locator(".run-curves svg polyline.run-line")).to_have_count(2)
    expect(page.locator(".run-spread svg circle.kernel-dot")).to_have_count(4)  # 2 correct problems per run
    sample0 = page.locator("table.run-score tr[data-rule='sample0'] td")
    expect(sample0.first).to_have_text("0.500")  # model A: its SiLU sample 0 is wrong
    expect(sample0.nth(8)).to_have_text("1.000")  # model B: fast_0 of the second table
    expect(page.locator("table.run-problems")).to_contain_text("L1 #2 SiLU")
    # Drawn in colour: the lines take their stroke from the stylesheet (no inline style under the CSP).
    stroke = page.locator(".run-curves svg polyline.run-line").first.evaluate("l => getComputedStyle(l).stroke")
    assert stroke == "rgb(47, 111, 222)"
    page.screenshot(path=str(tmp_path / "run-compare.png"), full_page=True)
