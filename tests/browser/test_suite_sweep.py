"""A suite sweep end to end on the real stack: two KernelBench level-1 problems imported by
`import_problems --validate`, validated by the evaluator, a folder of solutions judged by
`sweep_solutions` (one correct C kernel, one wrong), and fast_p read in the browser and the JSON.

The problems are KernelBench's own files with only their size constants shrunk, so one set of
inputs fits a 2-core CPU runner (4096 × 393216 floats is 6 GiB)."""

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LEVEL1 = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"
PROBLEMS = ("19_ReLU.py", "20_LeakyReLU.py")
SUITE = "KernelBench L1 sweep (e2e)"
DEADLINE_S = 400  # each wait: two validations with torch.compile baselines, then two evaluations, on two cores

SOLUTION = '''\
import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn

SOURCE = r"""
#include <stdint.h>
void apply(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) { float v = x[i]; y[i] = @BODY@; }
}
"""


def build(source):
    folder = tempfile.mkdtemp(prefix="kernel-")
    path = os.path.join(folder, "kernel.c")
    with open(path, "w") as handle:
        handle.write(source)
    library = os.path.join(folder, "kernel.so")
    subprocess.run(["cc", "-O3", "-shared", "-fPIC", path, "-o", library], capture_output=True, text=True, check=True)
    return ctypes.CDLL(library)


lib = build(SOURCE)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.apply(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(y.data_ptr()), ctypes.c_int64(x.numel()))
        return y
'''


def shrunk(name: str) -> str:
    source = (LEVEL1 / name).read_text()
    assert "batch_size = 4096" in source and "dim = 393216" in source
    return source.replace("batch_size = 4096", "batch_size = 64").replace("dim = 393216", "dim = 4096")


def test_import_validate_sweep_and_read_fast_p(logged_in_page, stack, tmp_path):
    problems = tmp_path / "KernelBench" / "level1"
    problems.mkdir(parents=True)
    for name in PROBLEMS:
        (problems / name).write_text(shrunk(name))
    done = stack.manage("import_problems", str(problems.parent), "--suite", SUITE, "--device", "cpu", "--validate")
    assert done.returncode == 0, done.stderr
    assert "2 accepted" in done.stdout, done.stdout

    page = logged_in_page
    page.goto("/suites/")
    page.get_by_role("link", name=SUITE).click()
    suite_url = page.url
    # The page follows the validations by itself (suite_live.js), without a reload.
    expect(page.get_by_text("Valid", exact=True)).to_have_count(2, timeout=DEADLINE_S * 1000)
    expect(page.locator("#suite-progress")).to_have_count(0)
    expect(page.locator("#suite-live")).to_have_attribute("data-busy", "false")

    # KernelBench's run layout: level1/<number>_<name>/kernel.py. ReLU right, LeakyReLU doubled (wrong).
    run = tmp_path / "run" / "level1"
    for folder, body in (("19_ReLU", "v > 0.f ? v : 0.f"), ("20_LeakyReLU", "2.f * v")):
        (run / folder).mkdir(parents=True)
        (run / folder / "kernel.py").write_text(SOLUTION.replace("@BODY@", body))
    done = stack.manage("sweep_solutions", str(run.parent), "--suite", SUITE, "--user", stack.username)
    assert done.returncode == 0, done.stderr
    assert "2 queued, 0 unmatched, 0 refused, of 2 files." in done.stdout, done.stdout

    # Loaded once while the kernels wait: the verdicts then arrive by themselves.
    page.goto(suite_url)
    expect(page.locator(".suite-score .verdict-counts")).to_contain_text(
        re.compile(r"Correct 1 .* incorrect 1 ", re.DOTALL), timeout=DEADLINE_S * 1000)
    expect(page.locator("#suite-progress")).to_have_count(0)
    fast = page.locator(".suite-score table.fast-p tbody tr")
    expect(fast.filter(has_text="fast_0").locator("td").first).to_have_text("50% (1/2)")
    cells = page.locator(".suite-score table.per-problem tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent.trim()))")
    # number -> (inputs read from the shrunk source: 64 × 4096 floats, outcome)
    assert {c[1]: (c[3], c[4]) for c in cells} == {"19": ("1.05 MB", "correct"), "20": ("1.05 MB", "incorrect")}

    # The JSON export says the same, and its geomean is the stored speedup of the one correct problem.
    exported = json.loads(page.request.get(page.get_by_role("link", name="JSON").get_attribute("href")).text())
    score = exported["scores"][0]
    assert score["fast_p"]["eager"]["fast_0"] == {"count": 1, "fraction": 0.5}
    correct = [r for r in score["rows"] if r["outcome"] == "correct"]
    assert [r["number"] for r in correct] == [19]
    assert score["geomean"]["eager"] == pytest.approx(correct[0]["speedup_vs_eager"])
    fast_1 = score["fast_p"]["eager"]["fast_1"]["count"]
    assert fast_1 == (1 if correct[0]["speedup_vs_eager"] > 1 else 0)
