"""How much device memory a validation's work before its device wait takes, drawn on the meta
device (runner/inside/validation.py), on KernelBench's own problems (tests/fixtures/kernelbench, MIT):
a problem of gigabytes waits for the device before it touches it."""

import resource
import types
from pathlib import Path

import torch

from runner.inside import validation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"


def fixture(name: str) -> types.SimpleNamespace:
    namespace: dict = {"__name__": "kernelbench_problem"}
    exec(compile((FIXTURES / name).read_text(), name, "exec"), namespace)
    return types.SimpleNamespace(**namespace)


def test_a_six_gigabyte_elementwise_problem_is_sized_without_allocating_it():
    relu = fixture("19_ReLU.py")  # 4096 x 393216 fp32 in, the same out
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    needed = validation.early_bytes(relu, relu.get_init_inputs())
    assert needed == 4 * 2 * 4096 * 393216 * 4
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 256 * 1024  # KiB: nothing drawn


def test_parameters_and_buffers_count():
    norm = fixture("33_BatchNorm.py")  # BatchNorm2d(64): weight, bias, running mean and variance, a step count
    state = 4 * 64 * 4 + 8
    data = 2 * 64 * 64 * 512 * 512 * 4  # in and out
    assert validation.early_bytes(norm, norm.get_init_inputs()) == 4 * (state + data)


def test_a_problem_that_cannot_run_on_meta_is_not_sized():
    branchy = types.SimpleNamespace(
        Model=type("Model", (torch.nn.Module,), {"forward": lambda self, x: x if x.sum() > 0 else -x}),
        get_inputs=lambda: [torch.randn(8)])
    assert validation.early_bytes(branchy, []) is None
    # so it waits for the device first, as does a job run alone after it ran out of memory
    assert validation.fits_before_device(branchy, [], {"early_share": 0.5}) is False


def test_a_job_alone_or_without_a_share_decides_without_cuda():
    relu = fixture("19_ReLU.py")
    assert validation.fits_before_device(relu, [], {"alone": True, "early_share": 0.5}) is False
    assert validation.fits_before_device(relu, [], {}) is True  # the CPU, or a parent that sets no share
