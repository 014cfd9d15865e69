"""The runner's Python API: validate a problem, evaluate a kernel, and a pool of warm
sandboxes to do both fast. Plain Python: this side never imports torch or CUDA; all
problem and kernel code runs in sandbox processes (sandbox.py, judge.py).
"""

from __future__ import annotations

import collections
import os
import random

from . import baselines, quarantine
from . import compile as compiling
from .errors import ProblemInvalid, RunnerError
from .pool import Pool
from .sandbox import Sandbox, isolation_failed
from .version import RUNNER_VERSION, SCHEMA

try:  # the static checks (written alongside); the runner works without them
    from .checks import check_source
except ImportError:  # pragma: no cover - only until runner/checks.py exists
    check_source = None

DEVICES = ("cpu", "cuda")
__all__ = ["Pool", "ProblemInvalid", "RunnerError", "evaluate", "validate", "health_check", "DEVICES"]
FAULTS = ("runtime_error", "crashed", "timeout", "oom")


# --- validate -------------------------------------------------------------------------------

def validate(problem_source: str, *, device: str = "cpu", timeout: float = 300.0, seed: int | None = None,
             _pool: Pool | None = None) -> dict:
    _check_device(device)
    seed = _seed(seed)
    pool = _pool or Pool(device, size=0)
    result = empty_validation()
    job = {"job": "validate", "device": device, "seed": seed, "problem_source": problem_source,
           "compile_baseline": _compile_baseline()}
    outcome, sandbox = _run(pool, job, timeout)
    result["environment"] = _environment(sandbox, pool)
    if outcome.result is None:
        result.update(status="invalid", reason=f"the problem could not be run: {outcome.reason}")
        return result
    raw = outcome.result
    result["status"] = "ok" if raw.get("status") == "ok" else "invalid"
    result["reason"] = raw.get("reason", "")
    for name in ("outputs", "family", "flops", "min_bytes"):
        result[name] = raw.get(name)
    result["baseline"].update(raw.get("baseline") or {})
    if result["status"] == "ok":
        cache_key = baselines.key(problem_source, device, result["environment"], _compile_baseline())
        baselines.store(cache_key, result)
    return result


def empty_validation() -> dict:
    return {"schema": SCHEMA, "status": "invalid", "reason": "", "outputs": None, "family": None, "flops": None,
            "min_bytes": None, "baseline": {"eager_ms": None, "compile_ms": None, "compile_mode": None},
            "environment": _environment(None, None)}


# --- evaluate -------------------------------------------------------------------------------

def evaluate(problem_source: str, kernel_source: str, *, device: str = "cpu", seed: int | None = None,
             timeout: float = 300.0, atol: float | None = None, rtol: float | None = None,
             allow_library: bool = False, _pool: Pool | None = None) -> dict:
    _check_device(device)
    seed = _seed(seed)
    pool = _pool or Pool(device, size=0)
    result = empty_verdict(seed)
    result["environment"] = _environment(None, pool)

    reasons = check_source(kernel_source, reference_source=problem_source, allow_library=allow_library,
                           device=device) if check_source else []
    if reasons:
        result.update(status="rejected", reason=reasons[0])
        return result

    environment = pool.current_environment()
    validation = _cached_validation(problem_source, device, environment, pool, timeout, seed)
    if validation["status"] != "ok":
        raise ProblemInvalid(f"the problem is invalid: {validation['reason']}")
    result["baseline"] = dict(validation["baseline"])

    job = {"job": "evaluate", "device": device, "seed": seed, "problem_source": problem_source,
           "kernel_source": kernel_source, "atol": atol, "rtol": rtol, "allow_library": bool(allow_library)}
    outcome, sandbox = _run(pool, job, timeout)
    result["environment"] = _environment(sandbox, pool)
    if outcome.result is None:
        result.update(status=outcome.status, reason=outcome.reason,
                      log=compiling.trim(outcome.stderr[-6000:]) if outcome.stderr else "")
    else:
        raw = outcome.result
        for name in ("status", "reason", "precision", "compile", "correctness", "timing", "phases"):
            if name in raw:
                result[name] = raw[name]
        result["log"] = raw.get("log", "")
    result["phases"].update(sandbox_s=outcome.seconds, warm_wait_s=sandbox.warm_wait)
    if result["status"] == "correct" and result["timing"]:
        _speedups(result, validation, device)
    if device == "cuda" and (result["status"] in ("crashed", "timeout")
                             or (outcome.result or {}).get("device_fault")):
        health_check(pool)
    return result


def empty_verdict(seed: int | None) -> dict:
    return {"schema": SCHEMA, "status": "runtime_error", "reason": "", "quarantined": False,
            "quarantine_reason": None, "seed": seed, "precision": None, "compile": {"seconds": None, "log": ""},
            "correctness": None, "timing": None,
            "baseline": {"eager_ms": None, "compile_ms": None, "compile_mode": None},
            "speedup_vs_eager": None, "speedup_vs_compile": None, "environment": _environment(None, None),
            "log": "", "phases": {}}


def _speedups(result: dict, validation: dict, device: str) -> None:
    median = result["timing"]["median_ms"]
    baseline = result["baseline"]
    if baseline.get("eager_ms"):
        result["speedup_vs_eager"] = baseline["eager_ms"] / median
    if baseline.get("compile_ms"):
        result["speedup_vs_compile"] = baseline["compile_ms"] / median
    floor = quarantine.floor_ms(device, result["environment"].get("device_name"), validation.get("flops"),
                                validation.get("min_bytes"))
    flagged, why = quarantine.judge(median, baseline, floor)
    result["quarantined"], result["quarantine_reason"] = flagged, (why or None)


def _cached_validation(problem_source, device, environment, pool, timeout, seed) -> dict:
    """The problem's validation (with baselines) from the cache, else run now."""
    cache_key = baselines.key(problem_source, device, environment, _compile_baseline())
    cached = baselines.load(cache_key)
    if cached is not None:
        return cached
    return validate(problem_source, device=device, timeout=timeout, seed=seed, _pool=pool)


def health_check(pool: Pool) -> None:
    """After a fault on the GPU: a fresh sandbox must compute correctly before the next
    candidate runs there."""
    for _ in range(2):
        outcome, _ = _run(pool, {"job": "health", "device": pool.device}, 60.0)
        if outcome.result and outcome.result.get("status") == "ok":
            return
    raise RunnerError("the GPU failed its health check after a faulty kernel: "
                      f"{(outcome.result or {}).get('reason') or outcome.reason}")


# --- helpers --------------------------------------------------------------------------------

def _run(pool: Pool, job: dict, timeout: float):
    sandbox = pool.take()
    if sandbox.wait_ready() is None and sandbox.isolation == "namespaces" \
            and os.environ.get("KERNELLAB_SANDBOX_ISOLATION", "auto") == "auto":
        sandbox.discard()
        sandbox = _retry_start(pool)
    outcome = sandbox.run(job, timeout)
    return outcome, sandbox


def _retry_start(pool: Pool) -> Sandbox:
    """A sandbox that could not start in namespaces (e.g. no user namespaces for the GPU):
    fall back to plain processes from now on."""
    isolation_failed()
    with pool._lock:
        stale, pool._warm = list(pool._warm), collections.deque()
        pool._warm.extend(Sandbox(pool.device, pool.threads) for _ in stale)
    for old in stale:
        old.discard()
    return Sandbox(pool.device, pool.threads)


def _environment(sandbox: Sandbox | None, pool: Pool | None) -> dict:
    env = None
    if sandbox is not None and sandbox.environment:
        env = dict(sandbox.environment)
        if pool is not None:
            pool.environment = env
    elif pool is not None and pool.environment:
        env = dict(pool.environment)
    base = {"device_name": None, "torch": None, "cuda": None, "driver": None, "python": None,
            "runner_version": RUNNER_VERSION}
    base.update(env or {})
    return base


def _seed(seed: int | None) -> int:
    return int(seed) if seed is not None else random.SystemRandom().randrange(2**31)


def _check_device(device: str) -> None:
    if device not in DEVICES:
        raise RunnerError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")


def _compile_baseline() -> bool:
    """KERNELLAB_BASELINE_COMPILE=0 skips the torch.compile baseline (fast test runs); the
    result then says compile_mode null."""
    return os.environ.get("KERNELLAB_BASELINE_COMPILE", "1") not in ("0", "false", "no")
