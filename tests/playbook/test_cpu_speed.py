"""The playbook's vectorised CPU kernels (explicit SIMD softmax and layernorm, inline vector
math for elementwise ops): their math is accurate on its own, and the real runner (real C
compiler, real sandbox) judges each kernel correct on every input distribution, on shapes
whose lengths leave a tail that is not a whole vector."""

import ctypes
import math
import os
import shutil
import subprocess
import textwrap

import pytest

import playbook
from playbook import elementwise, prelude

pytestmark = pytest.mark.serial  # times work on the host's cores: never beside another xdist worker

SOFTMAX = """
    import torch
    import torch.nn as nn
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
        def forward(self, x):
            return torch.softmax(x, dim=-1)
    def get_inputs():
        return [torch.randn(6, 1000) * 4]
    def get_init_inputs():
        return []
"""

LAYERNORM = """
    import torch
    import torch.nn as nn
    class Model(nn.Module):
        def __init__(self, shape):
            super().__init__()
            self.ln = nn.LayerNorm(shape)
        def forward(self, x):
            return self.ln(x)
    def get_inputs():
        return [torch.randn(3, 10, 101)]
    def get_init_inputs():
        return [(10, 101)]
"""

LAYERNORM_PLAIN = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
        def forward(self, x):
            return F.layer_norm(x, (777,))
    def get_inputs():
        return [torch.randn(5, 777) * 3 + 2]
    def get_init_inputs():
        return []
"""

GELU = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
        def forward(self, x):
            return F.gelu(x * 3)
    def get_inputs():
        return [torch.randn(7, 333)]
    def get_init_inputs():
        return []
"""

SILU = """
    import torch
    import torch.nn as nn
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
        def forward(self, x):
            return x * torch.sigmoid(x * 20) + torch.exp(-x * x)
    def get_inputs():
        return [torch.randn(5, 301)]
    def get_init_inputs():
        return []
"""

# (family, slug, problem, variant); each runner check compiles, checks three distributions and
# times the kernel and PyTorch's baselines (a first torch.compile of a new problem is slow): slow
KERNELS = {
    "softmax-v0": ("softmax", "explicit_simd", SOFTMAX, 0),
    "softmax-v1": ("softmax", "explicit_simd", SOFTMAX, 1),
    "softmax-v2": ("softmax", "explicit_simd", SOFTMAX, 2),
    "layernorm-v0": ("layernorm", "explicit_simd", LAYERNORM, 0),
    "layernorm-v1": ("layernorm", "explicit_simd", LAYERNORM, 1),
    "layernorm-v2": ("layernorm", "explicit_simd", LAYERNORM, 2),
    "layernorm-plain-v0": ("layernorm", "explicit_simd", LAYERNORM_PLAIN, 0),
    "layernorm-plain-v1": ("layernorm", "explicit_simd", LAYERNORM_PLAIN, 1),
    "gelu": ("elementwise", "inline_vector_math", GELU, 0),
    "sigmoid-exp": ("elementwise", "inline_vector_math", SILU, 0),
}

def kernel_source(family, slug, problem, variant):
    recipe = next(r for r in playbook.recipes(family, "cpu") if r.slug == slug)
    return playbook.render(textwrap.dedent(problem), family, "cpu", recipe, variant)


def assert_correct(pool, family, slug, problem, variant):
    result = pool.evaluate(textwrap.dedent(problem), kernel_source(family, slug, problem, variant))
    assert result["status"] == "correct", (result["status"], result["reason"], result["log"])
    names = {d["name"] for d in result["correctness"]["per_distribution"] if not d["skipped"]}
    assert {"get_inputs", "uniform", "offset"} <= names
    for distribution in result["correctness"]["per_distribution"]:
        # well inside the tolerance, not just at the 2x-of-PyTorch allowance
        assert distribution["err"] < 0.1, distribution


@pytest.mark.slow
@pytest.mark.parametrize("label", list(KERNELS))
def test_vector_kernels_are_correct_under_the_runner(cpu_pool, label):
    assert_correct(cpu_pool, *KERNELS[label])


# -- the math on its own: compiled with the flags the playbook uses, checked against double ------

PROBE = r'''
void probe_exp(const float* x, float* y, i64 n) {
    i64 i = 0;
    for (; i + VL <= n; i += VL) vstore(y + i, vexp_neg(vload(x + i)));
    for (; i < n; ++i) y[i] = exp_neg(x[i]);
}
void probe_erf(const float* x, float* y, i64 n) {
    #pragma omp simd
    for (i64 i = 0; i < n; ++i) y[i] = erff(x[i]);
}
void probe_expf(const float* x, float* y, i64 n) {
    #pragma omp simd
    for (i64 i = 0; i < n; ++i) y[i] = expf(x[i]);
}
'''


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    compiler = os.environ.get("CC", "cc")
    if not shutil.which(compiler):
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("probe")
    source = folder / "probe.c"
    source.write_text(prelude.C_COMMON + "#define INLINE_MATH 1\n" + elementwise.C_INLINE_MATH + prelude.C_SIMD + PROBE)
    library = folder / "probe.so"
    subprocess.run([compiler, "-O3", "-march=native", "-shared", "-fPIC", "-fopenmp-simd", str(source),
                    "-o", str(library), "-lm"], check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(library))


def call(lib, name, values):
    n = len(values)
    xs, ys = (ctypes.c_float * n)(*values), (ctypes.c_float * n)()
    getattr(lib, name)(xs, ys, ctypes.c_int64(n))
    return list(ys)


def grid(lo, hi, n):
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def test_vector_exp_is_within_a_few_ulp_on_the_softmax_range(probe):
    xs = [float(ctypes.c_float(v).value) for v in grid(-87.0, 0.0, 20011)]
    worst = max(abs(y - math.exp(x)) / math.exp(x) for x, y in zip(xs, call(probe, "probe_exp", xs)))
    assert worst < 4 * 2.0 ** -24  # about 2 ulp


def test_inline_erf_is_accurate_everywhere_and_keeps_specials(probe):
    xs = grid(-6.0, 6.0, 24001) + [1e-30, -1e-7, 3e-4, 1.999999, 2.0, 3.9999, 4.0, 1e30, -1e30]
    xs = [float(ctypes.c_float(v).value) for v in xs]
    ys = call(probe, "probe_erf", xs)
    assert max(abs(y - math.erf(x)) for x, y in zip(xs, ys)) < 3e-6
    assert call(probe, "probe_erf", [3.92, 3.93, 50.0, -50.0]) == [1.0, 1.0, 1.0, -1.0]
    assert abs(call(probe, "probe_erf", [0.0])[0]) < 3e-6  # an absolute-error fit: erf(0) is 2.5e-6
    inf = float("inf")
    special = call(probe, "probe_erf", [inf, -inf, float("nan")])
    assert special[:2] == [1.0, -1.0] and math.isnan(special[2])


def test_inline_exp_covers_the_whole_float_range(probe):
    xs = [float(ctypes.c_float(v).value) for v in grid(-87.0, 88.0, 20011)]
    worst = max(abs(y - math.exp(x)) / math.exp(x) for x, y in zip(xs, call(probe, "probe_expf", xs)))
    assert worst < 4 * 2.0 ** -24
    inf = float("inf")
    special = call(probe, "probe_expf", [100.0, inf, -100.0, -inf, float("nan")])
    assert special[:4] == [inf, inf, 0.0, 0.0] and math.isnan(special[4])
