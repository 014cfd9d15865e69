"""Problem facts read off the reference: the op family and the FLOPs the output needs, on the real
KernelBench problems stored in tests/fixtures/kernelbench/. GPU-sized problems run on PyTorch's meta
device (shapes only, nothing allocated); counts that depend on values run at small shapes."""

from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from runner.common import ceilings, dispatchmode, facts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"


def load(relative: str, **constants) -> dict:
    """A fixture problem's module namespace, with module-level constants (sizes) overridden."""
    namespace: dict = {"__name__": "kernelbench_problem"}
    exec(compile((FIXTURES / relative).read_text(), relative, "exec"), namespace)
    namespace.update(constants)
    return namespace


def build(namespace: dict, device: str = "meta"):
    torch.manual_seed(0)
    with torch.device(device):
        model = namespace["Model"](*namespace["get_init_inputs"]()).eval()
        inputs = list(namespace["get_inputs"]())
    return model, [v.to(device) if isinstance(v, torch.Tensor) else v for v in inputs]


def recorded_ops(model, inputs) -> list[str]:
    """The aten op names, as run_validate records them."""
    with dispatchmode.OpRecorder() as recorder, torch.no_grad():
        model(*inputs)
    return recorder.ops


def pytorch_flops(model, inputs) -> int:
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(*inputs)
    return counter.get_total_flops()


def family(relative: str, **constants) -> str | None:
    return facts.flop_facts(*build(load(relative, **constants)))["family"]


# --- family -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("relative", "expected"), [
    ("level1/61_conv_transposed_3D__square_input__square_kernel.py", "conv_transpose3d"),
    ("level1/58_conv_transposed_3D__asymmetric_input__asymmetric_kernel.py", "conv_transpose3d"),
    ("level2/13_ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling.py", "conv_transpose3d"),  # was softmax-like conv2d
    ("level1/54_conv_standard_3D__square_input__square_kernel.py", "conv3d"),
    ("level2/6_Conv3d_Softmax_MaxPool_MaxPool.py", "conv3d"),
    ("level2/43_Conv3d_Max_LogSumExp_ReLU.py", "conv3d"),  # was conv_relu_maxpool
    ("level1/67_conv_standard_1D.py", "conv1d"),
    ("level1/64_conv_transposed_1D.py", "conv_transpose1d"),
    ("level1/57_conv_transposed_2D__square_input__square_kernel.py", "conv_transpose2d"),
    ("level1/50_conv_standard_2D__square_input__square_kernel.py", "conv2d"),
    ("level1/82_conv_depthwise_2D_square_input_square_kernel.py", "conv2d"),
])
def test_convolutions_keep_their_dimensionality_and_transposition(relative, expected):
    assert family(relative) == expected


def test_aten_names_alone_cannot_tell_a_conv3d_so_they_keep_the_old_guess():
    # run_validate passes only the recorded names today; the trace's family is the precise one
    model, inputs = build(load("level1/54_conv_standard_3D__square_input__square_kernel.py"))
    ops = recorded_ops(model, inputs)
    assert facts.detect_family(ops) == "conv2d"
    assert facts.detect_family(ops, convolutions=[(3, False)]) == "conv3d"
    assert facts.detect_family(ops, functions=["conv3d"]) == "conv3d"
    assert facts.detect_family(ops, functions=["conv_transpose3d"]) == "conv_transpose3d"


@pytest.mark.parametrize("relative", ["level1/95_CrossEntropyLoss.py", "level1/96_HuberLoss.py"])
def test_losses_are_not_softmax_even_from_aten_names_alone(relative):
    model, inputs = build(load(relative))
    assert facts.detect_family(recorded_ops(model, inputs)) == "loss"
    assert facts.flop_facts(model, inputs)["family"] == "loss"


@pytest.mark.parametrize("relative", ["level1/98_KLDivLoss.py", "level1/99_TripletMarginLoss.py"])
def test_losses_that_decompose_are_known_by_the_function_called(relative):
    assert family(relative) == "loss"


def test_matmul_dropout_softmax_is_not_plain_softmax():
    model, inputs = build(load("level2/66_Matmul_Dropout_Softmax.py"))
    assert facts.detect_family(recorded_ops(model, inputs)) == "matmul_softmax"
    assert family("level2/66_Matmul_Dropout_Softmax.py") == "matmul_softmax"
    assert family("level1/23_Softmax.py") == "softmax"
    assert family("level1/24_LogSoftmax.py") == "log_softmax"


@pytest.mark.parametrize(("relative", "expected"), [
    ("level1/33_BatchNorm.py", "normalization"),  # each was "elementwise": one aten op, no reduction name
    ("level1/34_InstanceNorm.py", "normalization"),
    ("level1/35_GroupNorm_.py", "normalization"),
    ("level1/41_Max_Pooling_1D.py", "pooling"),
    ("level1/46_Average_Pooling_3D.py", "pooling"),
    ("level1/89_cumsum.py", "scan"),  # was "reduction"
    ("level1/90_cumprod.py", "scan"),  # was "elementwise"
    ("level1/39_L2Norm_.py", "reduction"),  # linalg_vector_norm: was "elementwise"
    ("level2/99_Matmul_GELU_Softmax.py", "matmul_softmax"),
])
def test_norms_pools_and_scans_are_not_elementwise(relative, expected):
    assert family(relative) == expected


def test_a_product_before_a_group_norm_keeps_the_matmul_family():
    assert family("level2/75_Gemm_GroupNorm_Min_BiasAdd.py") == "matmul"


def test_attention_is_its_own_family():
    assert family("level1/97_ScaledDotProductAttention.py") == "attention"
    assert family("level3/43_MinGPTCausalAttention.py") == "attention"


def test_catalog_problems_keep_their_families():
    from searches.catalog import _INDEX

    assert _INDEX
    for entry in _INDEX:
        namespace: dict = {"__name__": "catalog_problem"}
        exec(compile(entry.source, entry.filename, "exec"), namespace)
        model, inputs = build(namespace)  # meta: the CUDA-sized ones allocate nothing
        assert facts.detect_family(recorded_ops(model, inputs)) == entry.family, entry.key
        assert facts.flop_facts(model, inputs)["family"] == entry.family, entry.key


# --- FLOPs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("relative", [
    "level1/1_Square_matrix_multiplication_.py",
    "level1/3_Batched_matrix_multiplication.py",
    "level1/50_conv_standard_2D__square_input__square_kernel.py",
    "level1/61_conv_transposed_3D__square_input__square_kernel.py",
    "level1/97_ScaledDotProductAttention.py",
    "level2/66_Matmul_Dropout_Softmax.py",
    "level3/1_MLP.py",
])
def test_dense_problems_count_what_pytorch_counts(relative):
    model, inputs = build(load(relative))
    found = facts.flop_facts(model, inputs)
    assert found["flops"] == found["flops_as_written"] == pytorch_flops(model, inputs) > 0
    assert found["flops_upper_bound"] is False


def test_triu_of_a_product_counts_the_upper_triangle_at_the_real_shape():
    n = 4096  # the problem's own N; on meta, values unknown: every product of the kept triangle counts
    model, inputs = build(load("level1/14_Matmul_for_upper_triangular_matrices.py"))
    assert inputs[0].shape == (n, n)
    found = facts.flop_facts(model, inputs)
    assert found["flops_as_written"] == 2 * n ** 3 == pytorch_flops(model, inputs)  # 137 GFLOP
    assert found["flops"] == n * n * (n + 1)  # n(n+1)/2 outputs, 2n each: 68.7 GFLOP


@pytest.mark.parametrize("relative", [
    "level1/14_Matmul_for_upper_triangular_matrices.py",
    "level1/15_Matmul_for_lower_triangular_matrices.py",
])
def test_triangular_operands_count_only_their_nonzero_products(relative):
    n = 96
    model, inputs = build(load(relative, N=n, M=n), device="cpu")  # 15 calls its size M
    found = facts.flop_facts(model, inputs)
    # C[i, j] = sum over k between i and j of A[i, k] B[k, j]: n(n+1)(n+2)/6 multiply-adds. At the
    # problem's N = 4096 that is 22.9 GFLOP (about 23), not the 137 counted as written.
    assert found["flops"] == n * (n + 1) * (n + 2) // 3
    assert found["flops_as_written"] == 2 * n ** 3
    assert found["flops_upper_bound"] is True  # two bounds met: the figure may still be above the need
    dense = [torch.rand(n, n), torch.rand(n, n)]  # the same model on dense inputs: the kept triangle
    assert facts.flop_facts(model, dense)["flops"] == n * n * (n + 1)


class _Product(torch.nn.Module):
    def __init__(self, use):
        super().__init__()
        self.use = use

    def forward(self, a, b):
        return self.use(a @ b, a, b)


@pytest.mark.parametrize(("use", "useful", "written", "upper"), [  # in units of one product's FLOPs
    (lambda c, a, b: c, 1.0, 1, False),
    (lambda c, a, b: c[:, :8], 8 / 64, 1, False),  # a slice of the product
    (lambda c, a, b: c[3], 1 / 32, 1, False),
    (lambda c, a, b: torch.relu(c).sum(), 1.0, 1, False),
    (lambda c, a, b: a + 1, 0.0, 1, False),  # the product is never used
    (lambda c, a, b: (a @ b)[:2] + c[:2], 2 * 2 / 32, 2, False),  # two products, two rows of each
    (lambda c, a, b: torch.triu(c) + torch.tril(c), 1.0, 1, False),  # two triangles: the whole of it
    (lambda c, a, b: c[:, :8] + c[:, 4:12], 16 / 64, 1, True),  # overlapping slices: bounded by their sum
    (lambda c, a, b: c.masked_fill(torch.arange(64) >= 16, 0.0), 16 / 64, 1, False),  # filled: not needed
    (lambda c, a, b: torch.where(torch.arange(64) < 16, c, torch.zeros(())), 16 / 64, 1, False),
    (lambda c, a, b: torch.where(torch.arange(64) < 16, torch.zeros(()), c), 48 / 64, 1, False),
])
def test_work_the_output_never_uses_is_not_counted(use, useful, written, upper):
    a, b = torch.randn(32, 16), torch.randn(16, 64)
    found = facts.flop_facts(_Product(use), [a, b])
    one = 2 * 32 * 16 * 64
    assert found["flops_as_written"] == written * one
    assert found["flops"] == pytest.approx(useful * one, abs=1)
    assert found["flops_upper_bound"] is upper


def test_a_product_only_python_reads_still_counts():
    class Branch(torch.nn.Module):
        def forward(self, a, b):
            return a * 2 if float((a @ b).sum()) > 0 else a * 3

    a, b = torch.rand(8, 8), torch.rand(8, 8)
    assert facts.flop_facts(Branch(), [a, b])["flops"] == 2 * 8 ** 3


def test_a_write_through_a_view_counts_everything():
    class Scatter(torch.nn.Module):
        def forward(self, a, b):
            out = torch.zeros(a.shape[0], 2 * b.shape[1])
            out[:, : b.shape[1]].copy_(a @ b)
            return out

    a, b = torch.rand(8, 4), torch.rand(4, 8)
    found = facts.flop_facts(Scatter(), [a, b])
    assert found["flops"] == found["flops_as_written"] == 2 * 8 * 4 * 8


def test_causal_mask_halves_the_attention_scores():
    namespace = load("level3/43_MinGPTCausalAttention.py", batch_size=2, seq_len=32, max_seqlen=32, n_embd=64,
                     n_head=4)
    model, inputs = build(namespace, device="cpu")
    found = facts.flop_facts(model, inputs)
    b, t, c = 2, 32, 64
    linears = 2 * b * t * c * 3 * c + 2 * b * t * c * c
    scores = 2 * b * t * t * c  # q @ k^T over all heads; att @ v costs the same
    assert found["flops_as_written"] == linears + 2 * scores
    kept = (t + 1) / (2 * t)  # the lower triangle, diagonal included
    assert found["flops"] == pytest.approx(linears + 2 * scores * kept, rel=1e-9)
    assert found["values_known"] is True and found["flops_upper_bound"] is False


def test_a_mask_on_the_meta_device_makes_the_figure_an_upper_bound():
    namespace = load("level3/43_MinGPTCausalAttention.py")
    found = facts.flop_facts(*build(namespace))  # the real shape: values unknown
    assert found["values_known"] is False
    assert found["flops"] == found["flops_as_written"]
    assert found["flops_upper_bound"] is True
    dense = facts.flop_facts(*build(load("level1/1_Square_matrix_multiplication_.py")))
    assert dense["values_known"] is False and dense["flops_upper_bound"] is False


def test_nonzero_counts_in_chunks_match_count_nonzero():
    x = torch.randn(50, 30)
    x[x.abs() < 0.5] = 0
    for dim in (0, 1, -1, -2):
        expected = torch.count_nonzero(x, dim=dim)
        assert torch.equal(facts._count_nonzero(x, dim, chunk_elements=64), expected)
    batched = torch.stack([x, x * 0, torch.ones_like(x)])
    assert torch.equal(facts._count_nonzero(batched, -2, chunk_elements=64), torch.count_nonzero(batched, dim=-2))


# --- speed of light -----------------------------------------------------------------------------

def test_speed_of_light_says_when_its_flops_are_an_upper_bound():
    flops = 4096 * 4097 * 4098 // 3
    exact = ceilings.speed_of_light(device_name="NVIDIA H200", flops=flops, min_bytes=3 * 4096 ** 2 * 4,
                                    precision="fp32", median_ms=1.0)
    bound = ceilings.speed_of_light(device_name="NVIDIA H200", flops=flops, min_bytes=3 * 4096 ** 2 * 4,
                                    precision="fp32", median_ms=1.0, flops_upper_bound=True)
    assert exact["upper_bound"] is False and bound["upper_bound"] is True
    assert bound["basis"].startswith("at most 22.9 GFLOP") and not exact["basis"].startswith("at most")
    assert exact["fraction"] == bound["fraction"] == pytest.approx(flops / 51e12 * 1e3 / 1.0)
    assert exact["exceeds_floor"] is False


def test_a_time_below_the_floor_never_reads_as_plain():
    written = 2 * 4096 ** 3  # the triu problem counted as written, and a 1 ms kernel: 269%
    sol = ceilings.speed_of_light(device_name="NVIDIA H200", flops=written, min_bytes=0, precision="fp32",
                                  median_ms=1.0)
    assert sol["fraction"] == pytest.approx(2.69, rel=1e-2)
    assert sol["exceeds_floor"] is True and "beat this floor" in sol["basis"]
    at_floor = ceilings.speed_of_light(device_name="NVIDIA H200", flops=written, min_bytes=0, precision="fp32",
                                       median_ms=sol["floor_ms"])
    assert at_floor["exceeds_floor"] is False
