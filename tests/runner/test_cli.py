"""`python -m runner`: the JSON it prints carries every key of the contract."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from . import sources

ROOT = Path(__file__).resolve().parents[2]

VALIDATE_KEYS = {"schema", "status", "reason", "outputs", "family", "flops", "min_bytes", "baseline", "environment"}
EVALUATE_KEYS = {"schema", "status", "reason", "quarantined", "quarantine_reason", "seed", "precision", "compile",
                 "correctness", "timing", "baseline", "speedup_vs_eager", "speedup_vs_compile", "environment"}
BASELINE_KEYS = {"eager_ms", "eager_mean_ms", "compile_ms", "compile_mode"}
PAIRED_KEYS = {"blocks", "calls_per_block", "eager_ms", "speedup", "speedup_ci95", "idle_cpu_ms", "dropped"}
ENVIRONMENT_KEYS = {"device_name", "torch", "cuda", "driver", "python", "runner_version"}
TIMING_KEYS = {"median_ms", "mean_ms", "std_ms", "min_ms", "max_ms", "n", "ci95_ms", "outliers", "samples_ms"}
DISTRIBUTION_KEYS = {"name", "trials", "err", "ref_fp32_err", "max_abs_err", "skipped", "passed"}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k.startswith(("KERNELLAB_", "PATH", "HOME", "LANG"))}
    return subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def files(tmp_path):
    def write(name, text):
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return write


@pytest.mark.slow
def test_validate_json_has_every_key(files):
    done = run_cli("validate", files("p.py", sources.SILU_PROBLEM), "--device", "cpu", "--json", "--seed", "3")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) >= VALIDATE_KEYS
    assert set(result["baseline"]) == BASELINE_KEYS
    assert set(result["environment"]) >= ENVIRONMENT_KEYS
    assert result["schema"] == 1 and result["status"] == "ok"
    assert result["family"] == "elementwise"


@pytest.mark.slow
def test_evaluate_json_has_every_key_and_exit_zero_for_any_verdict(files):
    problem = files("p.py", sources.SILU_PROBLEM)
    done = run_cli("evaluate", problem, files("k.py", sources.SILU_KERNEL), "--json", "--seed", "11")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) >= EVALUATE_KEYS
    assert result["status"] == "correct" and result["seed"] == 11
    assert set(result["timing"]) == TIMING_KEYS
    assert set(result["compile"]) == {"seconds", "log"}
    assert set(result["correctness"]) == {"atol", "rtol", "passed", "per_distribution"}
    assert all(set(row) >= DISTRIBUTION_KEYS for row in result["correctness"]["per_distribution"])
    assert len(result["timing"]["ci95_ms"]) == 2
    assert set(result["paired"]) == PAIRED_KEYS and result["speedup_vs_eager"] == result["paired"]["speedup"]
    plain = run_cli("evaluate", problem, files("k.py", sources.SILU_KERNEL), "--seed", "11", "--counters")
    assert "vs eager paired: eager " in plain.stdout and " blocks between the kernel's, 95% CI " in plain.stdout
    assert "counters: no hardware counters on the CPU" in plain.stdout  # --counters asks the GPU's only

    broken = run_cli("evaluate", problem, files("bad.py", sources.SILU_COMPILE_ERROR), "--json",
                     "--atol", "1e-3", "--rtol", "1e-3")
    assert broken.returncode == 0, broken.stderr
    verdict = json.loads(broken.stdout)
    assert set(verdict) >= EVALUATE_KEYS
    assert verdict["status"] == "compile_error" and verdict["timing"] is None and verdict["paired"] is None
    assert isinstance(verdict["seed"], int)  # random, and reported


def test_usage_errors_exit_non_zero(files):
    missing = run_cli("evaluate", "/nonexistent/problem.py", files("k.py", sources.SILU_KERNEL))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert run_cli("evaluate", "only-one-file.py").returncode == 2
    assert run_cli("validate", files("p.py", sources.SILU_PROBLEM), "--device", "tpu").returncode == 2
