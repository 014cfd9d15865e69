"""`manage.py bench_lineage` runs end to end (small sizes) and prints its table."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_bench_lineage_prints_the_draw_time(require_chromium):
    done = subprocess.run([sys.executable, "manage.py", "bench_lineage", "--kernels", "150", "--loads", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    head = "lineage view, navigation to painted picture (150 kernels, n=2)"
    drawn = [line for line in lines if line.startswith(head)]
    assert drawn and "p50" in drawn[0] and " ms" in drawn[0], done.stdout
