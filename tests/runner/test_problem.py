import pytest
import torch

from runner.common import facts
from runner.inside import problem as problems


class _Module:
    @staticmethod
    def get_inputs():
        return [torch.randn(256, 256), torch.arange(10)]


def test_distributions_redraw_floating_inputs_only():
    plain = problems.make_inputs(_Module, "get_inputs", 1, "cpu")
    again = problems.make_inputs(_Module, "get_inputs", 1, "cpu")
    assert torch.equal(plain[0], again[0])  # same seed, same inputs
    offset = problems.make_inputs(_Module, "offset", 1, "cpu")
    assert abs(float(offset[0].mean()) - 1000.0) < 0.1
    assert 0.05 < float(offset[0].std()) < 0.2
    uniform = problems.make_inputs(_Module, "uniform", 1, "cpu")
    assert float(uniform[0].min()) >= -1 and float(uniform[0].max()) <= 1
    assert torch.equal(offset[1], plain[1])  # integers untouched


def test_tolerance_precedence_flag_then_problem_then_dtype():
    class WithTolerance:
        ATOL, RTOL = 1e-3, 1e-3

    fp32 = [torch.zeros(1)]
    fp16 = [torch.zeros(1, dtype=torch.float16)]
    assert problems.tolerance(fp32, object(), None, None) == (1e-4, 1e-4)
    assert problems.tolerance(fp16, object(), None, None) == (1e-2, 1e-2)
    assert problems.tolerance(fp32, WithTolerance, None, None) == (1e-3, 1e-3)
    assert problems.tolerance(fp32, WithTolerance, 5e-2, 6e-2) == (5e-2, 6e-2)


def test_family_from_the_reference_ops():
    assert facts.detect_family(["aten._softmax.default"]) == "softmax"
    assert facts.detect_family(["aten.native_layer_norm.default"]) == "layernorm"
    assert facts.detect_family(["aten.mm.default"]) == "matmul"
    assert facts.detect_family(["aten.convolution.default"]) == "conv2d"
    assert facts.detect_family(["aten.convolution.default", "aten.relu.default",
                                   "aten.max_pool2d_with_indices.default"]) == "conv_relu_maxpool"
    assert facts.detect_family(["aten.mul.Tensor", "aten.sigmoid.default"]) == "elementwise"
    assert facts.detect_family(["aten.sum.dim_IntList"]) == "reduction"
    assert facts.detect_family(["aten.view.default"]) is None


@pytest.mark.slow
def test_family_of_real_modules():
    from runner.common import dispatchmode

    def family(model, *inputs):
        with dispatchmode.OpRecorder() as recorder, torch.no_grad():
            model(*inputs)
        return facts.detect_family(recorder.ops)

    x = torch.randn(2, 3, 16, 16)
    conv = torch.nn.Conv2d(3, 4, 3)
    fused = torch.nn.Sequential(conv, torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2))
    assert family(conv, x) == "conv2d"
    assert family(fused, x) == "conv_relu_maxpool"
    assert family(torch.nn.LayerNorm(16), x) == "layernorm"
    assert family(torch.nn.Softmax(dim=1), x) == "softmax"
    assert family(torch.nn.Linear(16, 4), x) == "matmul"
