"""The stored KernelBench corpora are whole and unchanged: every manifest entry exists with its
sha256, the problems are KernelBench-format modules, the level counts are KernelBench's, and the
external kernels' expectations use KernelLab's verdict names. Pure file checks (no torch, no sandbox)."""

import ast
import hashlib
import json
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
KERNELBENCH = TESTS / "fixtures" / "kernelbench"
EXTERNAL = TESTS / "runner" / "external"
COMMIT = "423217d9fda91e0c2d67e4a43bf62f96f6d104f1"
# At that commit KernelBench has 100, 100 and 50 problems in levels 1, 2 and 3.
COUNTS = {"level1": 100, "level2": 100, "level3": 50}
VERDICTS = {"correct", "incorrect", "rejected", "compile_error", "runtime_error", "timeout", "crashed", "oom"}
FORMATS = {"cuda_load_inline", "cuda_cupy", "triton", "cute", "tilelang", "thunderkittens", "hip", "cpu_c"}

PROBLEMS = json.loads((KERNELBENCH / "manifest.json").read_text())
KERNELS = json.loads((EXTERNAL / "manifest.json").read_text())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def top_level_names(source: str) -> set[str]:
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def test_problem_manifest_names_the_commit_and_counts():
    assert PROBLEMS["commit"] == COMMIT
    assert COMMIT in (KERNELBENCH / "README.md").read_text()
    assert PROBLEMS["counts"] == COUNTS
    by_level = {level: [e for e in PROBLEMS["problems"] if e["file"].startswith(level + "/")] for level in COUNTS}
    assert {level: len(entries) for level, entries in by_level.items()} == COUNTS


def test_every_problem_file_is_listed_once():
    on_disk = {str(p.relative_to(KERNELBENCH)) for level in COUNTS for p in (KERNELBENCH / level).glob("*.py")}
    listed = [e["file"] for e in PROBLEMS["problems"]]
    assert len(listed) == len(set(listed))
    assert on_disk == set(listed)
    numbers = [(e["level"], e["number"]) for e in PROBLEMS["problems"]]
    assert len(numbers) == len(set(numbers))
    for level, count in COUNTS.items():  # problems are numbered 1..count in each level
        assert sorted(n for lv, n in numbers if f"level{lv}" == level) == list(range(1, count + 1))


@pytest.mark.parametrize("entry", PROBLEMS["problems"], ids=lambda e: e["file"])
def test_problem_is_intact_and_kernelbench_format(entry):
    path = KERNELBENCH / entry["file"]
    assert sha256(path) == entry["sha256"]
    level, filename = entry["file"].split("/")
    assert entry["level"] == int(level.removeprefix("level"))
    assert re.fullmatch(r"(\d+)_(.+)\.py", filename).groups() == (str(entry["number"]), entry["name"])
    assert entry["origin"] == f"KernelBench/{entry['file']}"
    names = top_level_names(path.read_text())
    assert {"Model", "get_inputs", "get_init_inputs"} <= names


def test_other_files_are_intact():
    files = {e["file"] for e in PROBLEMS["other_files"]}
    assert {"LICENSE", "results/timing/H100_Modal/baseline_time_torch.json"} <= files
    for entry in PROBLEMS["other_files"]:
        assert sha256(KERNELBENCH / entry["file"]) == entry["sha256"], entry["file"]
    assert (KERNELBENCH / "LICENSE").read_text().startswith("MIT License")


def test_h100_baselines_cover_exactly_the_stored_problems():
    baselines = json.loads((KERNELBENCH / "results/timing/H100_Modal/baseline_time_torch.json").read_text())
    assert set(baselines) == set(COUNTS)
    for level in COUNTS:
        stored = {e["file"].split("/")[1] for e in PROBLEMS["problems"] if e["file"].startswith(level + "/")}
        assert set(baselines[level]) == stored
        assert all(entry["mean"] > 0 for entry in baselines[level].values())


def test_external_manifest_names_the_commit_and_license():
    assert KERNELS["commit"] == COMMIT
    assert COMMIT in (EXTERNAL / "README.md").read_text()
    assert (EXTERNAL / "LICENSE").read_bytes() == (KERNELBENCH / "LICENSE").read_bytes()


def test_every_external_file_is_listed():
    on_disk = {str(p.relative_to(EXTERNAL)) for p in EXTERNAL.rglob("*.py")
               if p.name != "__init__.py" and not p.name.startswith("test_")}
    used = set()
    for kernel in KERNELS["kernels"]:
        used.add(kernel["kernel"])
        if not kernel["problem"].startswith("../"):
            used.add(kernel["problem"])
    assert on_disk == used


@pytest.mark.parametrize("kernel", KERNELS["kernels"], ids=lambda k: k["name"])
def test_external_kernel_is_intact_and_its_expectation_is_well_formed(kernel):
    for role in ("kernel", "problem"):
        path = (EXTERNAL / kernel[role]).resolve()
        assert path.is_file(), kernel[role]
        assert sha256(path) == kernel["sha256"][role], kernel[role]
    assert "ModelNew" in top_level_names((EXTERNAL / kernel["kernel"]).read_text())
    assert {"Model", "get_inputs", "get_init_inputs"} <= top_level_names((EXTERNAL / kernel["problem"]).read_text())
    assert kernel["format"] in FORMATS
    assert kernel["kind"] in {"honest", "adversarial"}
    assert (kernel["cheat"] is None) == (kernel["kind"] == "honest")
    expectations = [kernel["expected"]] + [kernel[k] for k in ("expected_if_missing", "expected_with_library")
                                           if k in kernel]
    for expected in expectations:
        assert expected["verdicts"] and set(expected["verdicts"]) <= VERDICTS, expected
    if kernel["kind"] == "adversarial":  # caught means never accepted
        assert "correct" not in kernel["expected"]["verdicts"]
    if "expected_if_missing" in kernel:
        assert kernel["requires"] and kernel["expected_if_missing"]["verdicts"] == ["compile_error"]
    if kernel["format"] == "hip":
        assert kernel["expected"] == {"verdicts": ["compile_error"], "reason_contains": "ROCm"}
    if kernel["format"] in {"cuda_load_inline", "triton"} and kernel["kind"] == "honest" \
            and "expected_with_library" not in kernel:
        assert kernel["expected"]["verdicts"] == ["correct"]
