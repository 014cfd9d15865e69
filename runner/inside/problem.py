"""Problems (KernelBench format) inside a sandbox: load the module, make its inputs with a
seed and a distribution, build models, and read off the facts validate reports.

Runs only in a sandbox process: it imports torch and executes the problem's code.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from ..common import rules

# The module's own get_inputs, then stress variants for floating inputs. A stress
# distribution on which the truth is not finite is skipped (and reported so).
DISTRIBUTIONS = ("get_inputs", "uniform", "offset")
TRIALS = {"get_inputs": 3, "uniform": 1, "offset": 1}
OFFSET_MEAN, OFFSET_STD = 1000.0, 0.1

DEFAULT_TOLERANCE = {  # dtype -> (atol, rtol)
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
    torch.float64: (1e-7, 1e-7),
}


class ProblemError(Exception):
    """The problem module itself is unusable; the message says why."""


def load_module(source: str, path: Path, name: str):
    """Import `source` as a module from `path` (a real file, so tracebacks show lines)."""
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def check_problem_module(module) -> None:
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise ProblemError(f"the problem defines no `{attr}`; a problem needs class Model(nn.Module), "
                               "get_inputs() and get_init_inputs()")
    if not (isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)):
        raise ProblemError("`Model` must be a class derived from torch.nn.Module")
    for attr in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(module, attr)):
            raise ProblemError(f"`{attr}` must be a function returning a list")


def build_model(cls, init_inputs: list, seed: int, device: str):
    torch.manual_seed(seed)
    model = cls(*init_inputs)
    return model.to(device).eval()


def make_inputs(module, distribution: str, seed: int, device: str) -> list:
    """The problem's inputs for one trial: get_inputs() under `seed` (its factory calls
    create tensors on the device directly), with floating tensors redrawn for the stress
    distributions."""
    torch.manual_seed(seed)
    with torch.device(device):
        inputs = list(module.get_inputs())
    generator = torch.Generator(device=device).manual_seed(seed + 7919)
    made = []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            value = value.to(device)
            if value.is_floating_point() and distribution != "get_inputs":
                value = _redraw(value, distribution, generator)
        made.append(value)
    return made


def _redraw(value: torch.Tensor, distribution: str, generator) -> torch.Tensor:
    shape, dtype, device = value.shape, value.dtype, value.device
    if distribution == "uniform":
        drawn = torch.rand(shape, generator=generator, device=device) * 2 - 1
    elif distribution == "offset":
        drawn = torch.randn(shape, generator=generator, device=device, dtype=torch.float64)
        drawn = drawn * OFFSET_STD + OFFSET_MEAN
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    return drawn.to(dtype)


def has_floating_input(inputs: list) -> bool:
    return any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in inputs)


def as_outputs(result) -> list:
    """forward's result as a list of tensors; raises ProblemError for anything else."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)) and result and all(isinstance(r, torch.Tensor) for r in result):
        return list(result)
    raise ProblemError(f"forward must return a tensor or a tuple of tensors, not {type(result).__name__}")


def tolerance(outputs: list, module, atol, rtol, rule: str | None = None) -> tuple[float, float]:
    """The flag wins, then the problem module's ATOL/RTOL, then the output dtype's default; under
    KernelBench's rule, the flag and then its own table (it reads no ATOL/RTOL of the problem)."""
    if rules.kernelbench(rule):
        loosest = max(rules.tolerance(rule, str(o.dtype).replace("torch.", "")) for o in outputs)
        return float(loosest[0] if atol is None else atol), float(loosest[1] if rtol is None else rtol)
    loosest = max((DEFAULT_TOLERANCE.get(o.dtype, (0.0, 0.0)) for o in outputs), default=(1e-4, 1e-4))
    problem_atol, problem_rtol = getattr(module, "ATOL", None), getattr(module, "RTOL", None)
    chosen_atol = atol if atol is not None else problem_atol if problem_atol is not None else loosest[0]
    chosen_rtol = rtol if rtol is not None else problem_rtol if problem_rtol is not None else loosest[1]
    return float(chosen_atol), float(chosen_rtol)


def tensor_bytes(values) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
