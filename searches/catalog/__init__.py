"""The built-in problem catalog: KernelBench-format problem files and their index.

Pure data (no Django, no torch): the quickstart loads these into Problem rows, and the
playbook's kernels under `playbook/` are written for the same op families.
Each mission problem comes at its exact shape for `cuda`, plus a CPU-sized twin whose eager
reference runs in a few milliseconds on two cores.
"""

from dataclasses import dataclass
from pathlib import Path

PROBLEM_DIR = Path(__file__).resolve().parent / "problems"


@dataclass(frozen=True)
class CatalogProblem:
    key: str  # stable slug, also Problem.catalog_key
    name: str
    description: str
    device: str  # "cpu" or "cuda"
    family: str  # what `runner validate` is expected to report
    filename: str  # under searches/catalog/problems/
    source: str  # the problem file's text
    atol: float | None = None  # None: the dtype's default tolerance
    rtol: float | None = None


def _problem(key: str, name: str, description: str, device: str, family: str, filename: str) -> CatalogProblem:
    source = (PROBLEM_DIR / filename).read_text()
    return CatalogProblem(key, name, description, device, family, filename, source)


_MISSION = "One of the five problems of the kernel-search study KernelLab reproduces."
_CPU_TWIN = "A CPU-sized twin of {key} for machines without a GPU."

_INDEX = (
    _problem(
        "matmul-4096x4096", "Matmul 4096x4096 (fp32)",
        f"C = A @ B with A and B 4096x4096 in fp32. Compute-bound. {_MISSION}",
        "cuda", "matmul", "matmul_4096.py"),
    _problem(
        "conv2d-100x3x224x224", "Conv2D, AlexNet conv1 (batch 100)",
        f"Conv2d(3->96, kernel 11, stride 4, padding 2) on x (100, 3, 224, 224). {_MISSION}",
        "cuda", "conv2d", "conv2d_alexnet.py"),
    _problem(
        "softmax-4096x65536", "Softmax 4096x65536",
        f"Softmax over dim=1 of a (4096, 65536) matrix. Memory-bound. {_MISSION}",
        "cuda", "softmax", "softmax_4096x65536.py"),
    _problem(
        "layernorm-16x64x256x256", "LayerNorm (16, 64, 256, 256)",
        f"LayerNorm over the last three dimensions (64, 256, 256), with weight and bias. {_MISSION}",
        "cuda", "layernorm", "layernorm_16x64x256x256.py"),
    _problem(
        "conv-relu-maxpool-100x3x224x224", "Conv2D + ReLU + MaxPool (AlexNet block 1)",
        f"AlexNet's conv1, then ReLU, then MaxPool2d(3, stride 2), on x (100, 3, 224, 224). {_MISSION}",
        "cuda", "conv_relu_maxpool", "conv_relu_maxpool_alexnet.py"),
    _problem(
        "gelu-8192x16384", "GELU 8192x16384",
        "Exact (erf) GELU, elementwise, on a (8192, 16384) matrix. Memory-bound.",
        "cuda", "elementwise", "gelu_8192x16384.py"),
    _problem(
        "sum-64x4096x512", "Sum over dim 1 of (64, 4096, 512)",
        "torch.sum over the middle dimension with keepdim=True: a strided reduction. Memory-bound.",
        "cuda", "reduction", "sum_64x4096x512.py"),
    _problem(
        "matmul-cpu", "Matmul 256x256 (CPU)", _CPU_TWIN.format(key="matmul-4096x4096"),
        "cpu", "matmul", "matmul_cpu.py"),
    _problem(
        "conv2d-cpu", "Conv2D k11 s4 (CPU)",
        _CPU_TWIN.format(key="conv2d-100x3x224x224") + " Conv2d(3->16, k=11, s=4, p=2) on x (2, 3, 64, 64).",
        "cpu", "conv2d", "conv2d_cpu.py"),
    _problem(
        "softmax-cpu", "Softmax 128x4096 (CPU)", _CPU_TWIN.format(key="softmax-4096x65536"),
        "cpu", "softmax", "softmax_cpu.py"),
    _problem(
        "layernorm-cpu", "LayerNorm (4, 16, 32, 32) (CPU)", _CPU_TWIN.format(key="layernorm-16x64x256x256"),
        "cpu", "layernorm", "layernorm_cpu.py"),
    _problem(
        "conv-relu-maxpool-cpu", "Conv2D + ReLU + MaxPool (CPU)",
        _CPU_TWIN.format(key="conv-relu-maxpool-100x3x224x224") + " Conv2d(3->16) on x (2, 3, 64, 64).",
        "cpu", "conv_relu_maxpool", "conv_relu_maxpool_cpu.py"),
    _problem(
        "gelu-cpu", "GELU 256x4096 (CPU)", _CPU_TWIN.format(key="gelu-8192x16384"),
        "cpu", "elementwise", "gelu_cpu.py"),
    _problem(
        "sum-cpu", "Sum over dim 1 of (8, 512, 256) (CPU)", _CPU_TWIN.format(key="sum-64x4096x512"),
        "cpu", "reduction", "sum_cpu.py"),
)


def problems() -> list[CatalogProblem]:
    return list(_INDEX)


def get(key: str) -> CatalogProblem:
    for problem in _INDEX:
        if problem.key == key:
            return problem
    known = ", ".join(problem.key for problem in _INDEX)
    raise KeyError(f"no catalog problem {key!r}; the catalog has: {known}")
