"""KernelBench's own example solutions and adversarial kernels, judged by the runner on a CUDA GPU
against the verdicts manifest.json expects under KernelLab's rules. Run on a GPU host:
python3 -m pytest -p no:django -p no:playwright -p no:cacheprovider tests/runner/external -m gpu

load_inline kernels compile with nvcc (30-60 s each), so the timeout per kernel is generous."""

import importlib.util
import json
import os
from pathlib import Path

import pytest

import runner

HERE = Path(__file__).resolve().parent
MANIFEST = json.loads((HERE / "manifest.json").read_text())

pytestmark = pytest.mark.gpu


def installed(requires: dict | None) -> bool:
    """Whether the device has what a kernel needs: a Python module, or a header tree."""
    if not requires:
        return True
    if "module" in requires:
        return importlib.util.find_spec(requires["module"]) is not None
    root = Path(os.environ.get(requires["root_env"], requires["root_default"]))
    return (root / requires["headers"]).is_file()


def expectation(kernel: dict, *, allow_library: bool) -> dict:
    if allow_library:
        return kernel["expected_with_library"]
    if not installed(kernel.get("requires")):
        return kernel["expected_if_missing"]
    return kernel["expected"]


CASES = [pytest.param(k, False, id=k["name"]) for k in MANIFEST["kernels"]]
CASES += [pytest.param(k, True, id=k["name"] + "-with-library") for k in MANIFEST["kernels"]
          if "expected_with_library" in k]


@pytest.mark.parametrize(("kernel", "allow_library"), CASES)
def test_external_kernel_gets_its_expected_verdict(kernel, allow_library, cuda_pool):
    problem = (HERE / kernel["problem"]).read_text()
    source = (HERE / kernel["kernel"]).read_text()
    expected = expectation(kernel, allow_library=allow_library)
    result = runner.evaluate(problem, source, device="cuda", seed=11, timeout=600.0,
                             allow_library=allow_library, _pool=cuda_pool)
    said = f"{result['status']}: {result['reason']}\n{result.get('log', '')[-2000:]}"
    assert result["status"] in expected["verdicts"], said
    if expected.get("reason_contains"):
        text = result["reason"] + " " + result.get("compile", {}).get("log", "") + " " + result.get("log", "")
        assert expected["reason_contains"].lower() in text.lower(), said
    if expected.get("reason_code"):
        assert result["reason_code"] == expected["reason_code"], said
    if result["status"] == "correct":  # unranked only where NVML saw another process on the GPU's SMs
        # (the GPU sweep's other test processes, outside this pool's device lock)
        assert (result["quarantined"] is False
                or "other processes used the GPU's SMs" in result["quarantine_reason"]), result["quarantine_reason"]
