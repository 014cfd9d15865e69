"""`manage.py bench_dashboard` runs end to end (small sizes) and prints its table."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_bench_dashboard_prints_page_time_and_latency(require_chromium):
    done = subprocess.run([sys.executable, "manage.py", "bench_dashboard", "--kernels", "200", "--events", "8",
                           "--requests", "3"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("search page server time (200 kernels") for line in lines), done.stdout
    latency = [line for line in lines if line.startswith("event latency worker -> browser, embedded")]
    assert latency and "n=8" in latency[0] and "p95" in latency[0], done.stdout
