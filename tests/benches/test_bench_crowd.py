"""`manage.py bench_dashboard --viewers N --page-loads M`: a crowd of websocket viewers and of
concurrent page loads, from a process of its own (benches/crowd.py), reported per
count. No browser needed."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_a_crowd_of_viewers_and_page_loads_is_measured_and_reported():
    done = subprocess.run([sys.executable, "manage.py", "bench_dashboard", "--kernels", "60", "--events", "4",
                           "--requests", "1", "--viewers", "3", "12", "--page-loads", "6"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for viewers in (3, 12):
        row = next(line for line in lines if f", {viewers} viewers (" in line)
        # every viewer connected and heard every event: viewers x events latencies
        assert f"({viewers} connected in" in row and "0 short" in row and f"n={viewers * 4}" in row, row
        assert re.search(r"p95 \d+ ms", row), row
    loads = next(line for line in lines if line.startswith("6 concurrent loads of the whole search page"))
    assert "(0 failed" in loads and re.search(r"p95 \d+ ms", loads), loads
    assert any("a later load, the tree from the cache" in line for line in lines), done.stdout
