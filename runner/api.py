"""The runner's Python API: validate a problem, evaluate a kernel, and a pool of warm
sandboxes to do both fast. Plain Python: this side never imports torch or CUDA.

Imports go one way: api -> pool -> evaluation -> sandbox; the pool's methods and these
functions share evaluation.py's code.
"""

from __future__ import annotations

from .host import evaluation
from .common.errors import ProblemInvalid, RunnerError
from .host.evaluation import DEVICES, health_check
from .host.pool import Pool
from .verdict import Verdict

__all__ = ["Pool", "ProblemInvalid", "RunnerError", "evaluate", "validate", "health_check", "DEVICES"]


def validate(problem_source: str, *, device: str = "cpu", timeout: float = 300.0, seed: int | None = None,
             more_baselines=(), _pool: Pool | None = None) -> dict:
    """`more_baselines`: any of "reduce-overhead", "max-autotune", "cudagraph" (runner/host/baselines.py)."""
    evaluation.check_device(device)
    arguments = dict(device=device, timeout=timeout, seed=seed, more_baselines=more_baselines)
    if _pool is not None:
        return evaluation.validate(_pool, problem_source, **arguments)
    with Pool(device, size=0) as pool:
        return evaluation.validate(pool, problem_source, **arguments)


def evaluate(problem_source: str, kernel_source: str, *, device: str = "cpu", seed: int | None = None,
             timeout: float = 300.0, atol: float | None = None, rtol: float | None = None,
             allow_library: bool = False, rule: str | None = None, more_baselines=(), compile_only: bool = False,
             untimed: bool = False, counters: bool = False, _pool: Pool | None = None) -> Verdict:
    """`rule`: "kernellab" (default), "kernelbench" (v0.1) or "kernelbench-main" (runner/common/rules.py);
    `more_baselines` as validate's, each speedup in the verdict's `speedup_vs_more`; `compile_only` and
    `untimed`: a draft's build or untimed check; `counters`: Nsight Compute's counters in the profile, on the
    GPU (runner/host/evaluation.py)."""
    evaluation.check_device(device)
    arguments = dict(device=device, seed=seed, timeout=timeout, atol=atol, rtol=rtol, allow_library=allow_library,
                     rule=rule, more_baselines=more_baselines, compile_only=compile_only, untimed=untimed,
                     counters=counters)
    if _pool is not None:
        return evaluation.evaluate(_pool, problem_source, kernel_source, **arguments)
    with Pool(device, size=0) as pool:
        return evaluation.evaluate(pool, problem_source, kernel_source, **arguments)
