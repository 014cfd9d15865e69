"""KernelBench's own analysis code, vendored unchanged under tests/fixtures/kernelbench_analysis, loaded
as a test oracle. Only what it imports for its command line and printing is stood in for (pydra,
tabulate), and its dataset is built from problem file names, as its local dataset does."""

import ast
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench_analysis"


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Problem:
    def __init__(self, number: int, name: str):
        self.problem_id, self.name = number, name


class _Dataset:
    def __init__(self, files: dict[int, str]):
        self.problems = {n: _Problem(n, name) for n, name in files.items()}

    def __len__(self):
        return len(self.problems)

    def get_problem_ids(self):
        return sorted(self.problems)

    def get_problem_by_id(self, number):
        return self.problems[number]


def analyze_greedy_eval(files_by_level: dict[int, dict[int, str]], **arguments) -> dict:
    """benchmark_eval_analysis.analyze_greedy_eval, its dataset being `files_by_level[level]`
    ({number: file name}); the stand-ins are in place while it runs (it imports at call time too)."""
    pydra = types.SimpleNamespace(main=lambda base: (lambda fn: fn), Config=object, REQUIRED=object())
    dataset = types.SimpleNamespace(construct_kernelbench_dataset=lambda level: _Dataset(files_by_level[level]))
    package = types.ModuleType("kernelbench")
    package.__path__ = []
    stand_ins = {"pydra": pydra, "tabulate": types.SimpleNamespace(tabulate=lambda *a, **k: ""),
                 "kernelbench": package, "kernelbench.dataset": dataset,
                 "kernelbench.score": _module("kernelbench_score", HERE / "score.py")}
    saved = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    try:
        module = _module("kernelbench_benchmark_eval_analysis", HERE / "benchmark_eval_analysis.py")
        return module.analyze_greedy_eval(**arguments)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def calc_pass_at_k():
    """KernelBench's pass@k estimator, read alone from eval_from_generations.py."""
    tree = ast.parse((HERE / "eval_from_generations.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "calc_pass_at_k")
    scope = {"np": np}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "eval_from_generations.py", "exec"), scope)
    return scope["calc_pass_at_k"]


def static_checker():
    return _module("kernelbench_static_checker", HERE / "kernel_static_checker.py")
