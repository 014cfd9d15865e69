"""KernelLab's runner: judges untrusted kernels (KernelBench format) in sandboxes.

    import runner
    runner.validate(problem_source, device="cpu")
    runner.evaluate(problem_source, kernel_source, device="cpu")
    with runner.Pool(device="cpu", size=1) as pool:
        pool.evaluate(problem_source, kernel_source)

Plain Python, no Django; importing it loads neither torch nor CUDA (sandboxes do).

The code is split by trust zone: `host/` (this process, the parent), `inside/` (what runs in a
candidate's or a problem's sandbox), `judge/` (the trusted judge) and `common/` (shared by all
three). Callers outside the runner use only what this module exports.
"""

from .api import Pool, evaluate, validate
from .common import ceilings
from .common.errors import Cancelled, DeviceBusy, ProblemInvalid, RunnerError
from .common.version import RUNNER_VERSION, SCHEMA
from .host import devicefacts
from .host.evaluation import NOISY_QUARANTINE
from .host.limits import Limits
from .verdict import Verdict

__all__ = ["Pool", "evaluate", "validate", "Verdict", "RunnerError", "ProblemInvalid", "DeviceBusy", "Cancelled",
           "RUNNER_VERSION", "SCHEMA", "NOISY_QUARANTINE", "Limits", "ceilings", "devicefacts"]
