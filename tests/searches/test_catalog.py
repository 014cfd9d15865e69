"""The built-in catalog: every file is a KernelBench problem, keys are stable and unique, the
mission's five problems are there at their exact shapes with CPU twins, and the CPU problems
validate in the runner's sandbox with the family the playbook expects."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from proposers.playbook import FAMILY_NAMES
from searches import catalog

ROOT = Path(__file__).resolve().parents[2]
CPU_PROBLEMS = [p for p in catalog.problems() if p.device == "cpu"]


def top_level_names(source: str) -> set[str]:
    tree = ast.parse(source)
    return {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}


@pytest.mark.parametrize("problem", catalog.problems(), ids=lambda p: p.key)
def test_every_file_is_a_kernelbench_problem(problem):
    assert {"Model", "get_inputs", "get_init_inputs"} <= top_level_names(problem.source)
    assert problem.device in {"cpu", "cuda"}
    assert problem.family in FAMILY_NAMES
    assert problem.name and problem.description


def test_keys_are_unique_and_get_finds_each():
    keys = [p.key for p in catalog.problems()]
    assert len(keys) == len(set(keys))
    for key in keys:
        assert catalog.get(key).key == key


def test_unknown_key_names_the_known_ones():
    with pytest.raises(KeyError, match="softmax-cpu"):
        catalog.get("no-such-problem")


def test_every_gpu_problem_has_a_cpu_twin_of_its_family():
    gpu = {p.family for p in catalog.problems() if p.device == "cuda"}
    cpu = {p.family for p in CPU_PROBLEMS}
    assert gpu == cpu == set(FAMILY_NAMES)


@pytest.mark.parametrize("key, expected", [
    ("matmul-4096x4096", {"N": 4096}),
    ("softmax-4096x65536", {"rows": 4096, "cols": 65536}),
    ("layernorm-16x64x256x256", {"batch_size": 16, "features": 64, "dim1": 256, "dim2": 256}),
    ("conv2d-100x3x224x224", {"batch_size": 100, "height": 224}),
    ("conv-relu-maxpool-100x3x224x224", {"batch_size": 100, "height": 224}),
])
def test_mission_problems_have_their_exact_shapes(key, expected):
    source = catalog.get(key).source
    constants = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = ast.literal_eval(node.value)
    assert {name: constants[name] for name in expected} == expected
    if key.startswith("conv"):
        assert "return [3, 96, 11, 4, 2]" in source  # Conv2d(3 -> 96, k=11, s=4, p=2)
    if key.startswith("conv-relu"):
        assert "nn.MaxPool2d(kernel_size=3, stride=2)" in source


def test_catalog_and_playbook_import_without_django_or_torch():
    code = ("import sys; import searches.catalog, proposers.playbook, proposers.prompts, playbook; "
            "playbook.families(); "
            "bad = [m for m in ('django', 'torch', 'cupy') if m in sys.modules]; "
            "assert not bad, bad")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("problem", CPU_PROBLEMS, ids=lambda p: p.key)
def test_cpu_problems_validate_with_their_family(cpu_pool, problem):
    result = cpu_pool.validate(problem.source)
    assert result["status"] == "ok", result["reason"]
    assert result["family"] == problem.family
    assert result["baseline"]["eager_ms"] < 50
