"""A suite sweep end to end on the real stack: five KernelBench level-1 problems imported by
`import_problems --validate`, validated by the evaluator, a folder of solutions judged by
`sweep_solutions`, and fast_p read in the browser and the JSON export. The solutions sit far from
the thresholds: two correct C kernels that run their loop 32 times (well under 0.3x eager), one
fused Softsign (eager makes two temporaries of 16 MB: several times faster), one wrong, and one
that calls PyTorch's own sigmoid: KernelBench-legal, turned away outside library mode but shown
apart from cheats, on the page and in the export.

The problems are KernelBench's own files with only their size constants shrunk, so one set of
inputs fits a 2-core CPU runner (4096 × 393216 floats is 6 GiB)."""

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1500)]  # its own waits add up to 1,600 s

LEVEL1 = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"
# file -> (rows after shrinking, the solution's C body or None for the cheat, its passes, the outcome expected)
PROBLEMS = {
    "19_ReLU.py": (64, "v > 0.f ? v : 0.f", 32, "correct"),  # slow
    "20_LeakyReLU.py": (64, "2.f * v", 1, "incorrect"),
    "21_Sigmoid.py": (64, None, 1, "uses_pytorch"),
    "22_Tanh.py": (64, "tanhf(v)", 32, "correct"),  # slow
    "30_Softsign.py": (1024, "v / (1.f + fabsf(v))", 1, "correct"),  # one pass, no temporaries
}
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
#include <math.h>
#include <stdint.h>
void apply(const float* x, float* y, int64_t n) {
    for (volatile int pass = 0; pass < @PASSES@; pass++)
        for (int64_t i = 0; i < n; i++) { float v = x[i]; y[i] = @BODY@; }
}
"""


def build(source):
    folder = tempfile.mkdtemp(prefix="kernel-")
    path = os.path.join(folder, "kernel.c")
    with open(path, "w") as handle:
        handle.write(source)
    library = os.path.join(folder, "kernel.so")
    subprocess.run(["cc", "-O3", "-shared", "-fPIC", path, "-o", library, "-lm"], capture_output=True, text=True,
                   check=True)
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


ALL_PYTORCH = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        return torch.sigmoid(x)
"""


def shrunk(name: str, rows: int) -> str:
    source = (LEVEL1 / name).read_text()
    assert "batch_size = 4096" in source and "dim = 393216" in source
    return source.replace("batch_size = 4096", f"batch_size = {rows}").replace("dim = 393216", "dim = 4096")


def solution(body: str | None, passes: int) -> str:
    if body is None:
        return ALL_PYTORCH
    return SOLUTION.replace("@PASSES@", str(passes)).replace("@BODY@", body)


def test_import_validate_sweep_and_read_fast_p(logged_in_page, stack, tmp_path):
    problems = tmp_path / "KernelBench" / "level1"
    problems.mkdir(parents=True)
    for name, (rows, _, _, _) in PROBLEMS.items():
        (problems / name).write_text(shrunk(name, rows))
    done = stack.manage("import_problems", str(problems.parent), "--suite", SUITE, "--device", "cpu", "--validate")
    assert done.returncode == 0, done.stderr
    assert "5 accepted" in done.stdout, done.stdout

    page = logged_in_page
    page.goto("/suites/")
    page.get_by_role("link", name=SUITE).click()
    suite_url = page.url
    # The page follows the validations by itself (suite_live.js), without a reload.
    expect(page.get_by_text("Valid", exact=True)).to_have_count(5, timeout=DEADLINE_S * 1000)
    expect(page.locator("#suite-progress")).to_have_count(0)
    expect(page.locator("#suite-live")).to_have_attribute("data-busy", "false")

    # KernelBench's run layout: level1/<number>_<name>/kernel.py.
    run = tmp_path / "run" / "level1"
    for name, (_, body, passes, _) in PROBLEMS.items():
        folder = run / name.removesuffix(".py").rstrip("_")
        folder.mkdir(parents=True)
        (folder / "kernel.py").write_text(solution(body, passes))
    done = stack.manage("sweep_solutions", str(run.parent), "--suite", SUITE, "--user", stack.username)
    assert done.returncode == 0, done.stderr
    assert "5 queued, 0 unmatched, 0 refused, of 5 files." in done.stdout, done.stdout

    # Loaded once while the kernels wait: the verdicts then arrive by themselves.
    page.goto(suite_url)
    # The page stops fetching once nothing is in progress; what it shows then must be every verdict.
    expect(page.locator("#suite-live")).to_have_attribute("data-busy", "false", timeout=3 * DEADLINE_S * 1000)
    expect(page.locator("#suite-progress")).to_have_count(0)
    expect(page.locator(".suite-score .verdict-counts")).to_contain_text(
        re.compile(r"Correct 3 .* cheats caught 0 .* uses PyTorch \(allowed in library mode\) 1 .* incorrect 1 ",
                   re.DOTALL), timeout=5000)
    fast = page.locator(".suite-score table.fast-p tbody tr")
    expect(fast.filter(has_text="fast_0").locator("td").first).to_have_text("60% (3/5)")
    expect(fast.filter(has_text="fast_1").first.locator("td").first).to_have_text("20% (1/5)")
    cells = page.locator(".suite-score table.per-problem tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent.trim()))")
    # number -> outcome; the inputs read from the shrunk sources: 64 (or 1024) × 4096 floats
    assert {c[1]: c[4] for c in cells} == {name.split("_")[0]: outcome for name, (*_, outcome) in PROBLEMS.items()}
    assert {c[1]: c[3] for c in cells}["30"] == "16.8 MB"

    # The JSON export says the same; its geomean is that of the three correct problems' stored speedups.
    exported = json.loads(page.request.get(page.get_by_role("link", name="JSON").get_attribute("href")).text())
    score = exported["scores"][0]
    assert score["fast_p"]["eager"]["fast_0"] == {"count": 3, "fraction": 0.6}
    speedups = {r["number"]: r["speedup_vs_eager"] for r in score["rows"] if r["outcome"] == "correct"}
    assert set(speedups) == {19, 22, 30}
    assert speedups[19] < 0.3 and speedups[22] < 0.3 and speedups[30] > 2, speedups  # 3.3-3.4x measured
    assert score["fast_p"]["eager"]["fast_1"] == {"count": 1, "fraction": 0.2}
    assert score["geomean"]["eager"] == pytest.approx((speedups[19] * speedups[22] * speedups[30]) ** (1 / 3))
    [all_pytorch] = score["uses_pytorch"]
    assert score["cheats"] == [] and "sigmoid" in all_pytorch["reason"], score
    expect(page.locator(".suite-score details summary")).to_have_text("Uses PyTorch, allowed in library mode (1)")
