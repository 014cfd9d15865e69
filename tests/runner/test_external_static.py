"""The external corpus (tests/runner/external: KernelBench's own kernels) on the CPU, in CI: the
static checks pass every honest kernel on to be run, give the expected verdict, with its reason
code, to those they decide alone (HIP, the side-stream cheat), and only advise on the partial replacement,
which the run decides. The whole
verdicts come from the GPU run of tests/runner/external/test_external.py."""

import json
from pathlib import Path

import pytest

from runner.common import findings
from runner.host.checks import check_findings

EXTERNAL = Path(__file__).resolve().parent / "external"
MANIFEST = json.loads((EXTERNAL / "manifest.json").read_text())
KERNELS = {k["name"]: k for k in MANIFEST["kernels"]}

# Decided before anything runs, with the code the verdict carries.
STATIC = {
    "add_hip": ("compile_error", findings.TOOLCHAIN, "ROCm"),
    "non_default_stream": ("rejected", findings.RULE, "cudaStreamCreateWithFlags"),
}
# Said before anything runs, decided by the run (its op recorder names the same ops).
ADVISED = {
    "few_shot_mnist2": (findings.PARTIAL, "uses PyTorch for conv2d, relu, linear, log_softmax"),
}


def judged(name: str, allow_library: bool = False):
    kernel = KERNELS[name]
    return check_findings((EXTERNAL / kernel["kernel"]).read_text(),
                          reference_source=(EXTERNAL / kernel["problem"]).read_text(),
                          allow_library=allow_library, device="cuda")


@pytest.mark.parametrize("name", sorted(set(KERNELS) - set(STATIC) - set(ADVISED)))
def test_kernels_the_runtime_judges_pass_the_static_checks(name):
    assert judged(name) == []


@pytest.mark.parametrize("name", sorted(ADVISED))
def test_advised_kernels_are_left_to_the_run_with_the_finding_said(name):
    code, words = ADVISED[name]
    found = judged(name)
    assert found and all(f.advisory for f in found), found
    assert found[0].code == code and words in found[0].reason


@pytest.mark.parametrize("name", sorted(STATIC))
def test_statically_decided_kernels_get_their_verdict_and_code(name):
    status, code, words = STATIC[name]
    found = judged(name)
    assert found and (found[0].status, found[0].code) == (status, code), found
    assert words in found[0].reason
    assert status in KERNELS[name]["expected"]["verdicts"]
    assert KERNELS[name]["expected"].get("reason_code", code) == code


def test_partial_replacement_passes_static_checks_with_library_calls():
    assert judged("few_shot_mnist2", allow_library=True) == []
