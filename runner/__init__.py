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

import importlib

# Exported name -> (module, attribute; None: the module itself). Loaded on first use (PEP 562), so that
# importing runner.inside or runner.judge, which Python does through this package, loads no host code
# into a sandbox or the judge.
_EXPORTS = {
    "Pool": (".api", "Pool"), "evaluate": (".api", "evaluate"), "validate": (".api", "validate"),
    "Verdict": (".verdict", "Verdict"), "RunnerError": (".common.errors", "RunnerError"),
    "ProblemInvalid": (".common.errors", "ProblemInvalid"), "DeviceBusy": (".common.errors", "DeviceBusy"),
    "Cancelled": (".common.errors", "Cancelled"), "RUNNER_VERSION": (".common.version", "RUNNER_VERSION"),
    "SCHEMA": (".common.version", "SCHEMA"), "NOISY_QUARANTINE": (".host.evaluation", "NOISY_QUARANTINE"),
    "Limits": (".host.limits", "Limits"), "ceilings": (".common.ceilings", None),
    "devicefacts": (".host.devicefacts", None),
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    where, attribute = _EXPORTS[name]
    module = importlib.import_module(where, __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
