"""KernelLab's runner: judges untrusted kernels (KernelBench format) in sandboxes.

    import runner
    runner.validate(problem_source, device="cpu")
    runner.evaluate(problem_source, kernel_source, device="cpu")
    with runner.Pool(device="cpu", size=1) as pool:
        pool.evaluate(problem_source, kernel_source)

Plain Python, no Django; importing it loads neither torch nor CUDA (sandboxes do).
"""

from .api import Pool, ProblemInvalid, RunnerError, evaluate, validate
from .common.version import RUNNER_VERSION, SCHEMA

__all__ = ["Pool", "ProblemInvalid", "RunnerError", "evaluate", "validate", "RUNNER_VERSION", "SCHEMA"]
