"""Unit tests of the static checks (runner/host/checks.py): each cheat class is flagged with a reason
that names the line and the fix, and the honest fast-path kernels (cupy RawModule on torch's stream,
C built with the system compiler and loaded with ctypes, load_inline) pass clean."""

import textwrap

import pytest

from runner.host.checks import check_findings, check_source, deferred_internals

from . import sources
from .corpus import cases, read

SOFTMAX = read("problems/softmax.py")
LAYERNORM = read("problems/layernorm.py")

# A C kernel built with the system compiler, as docs/KERNEL_FORMAT.md describes; {forward} is the
# body of ModelNew.forward and {extra} more module-level code.
CTYPES_TEMPLATE = '''
import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn

SOURCE = "void run(const float *x, float *y, long n) {{ for (long i = 0; i < n; ++i) y[i] = x[i]; }}"
folder = tempfile.mkdtemp()
path = os.path.join(folder, "k.c")
with open(path, "w") as f:
    f.write(SOURCE)
subprocess.run(["cc", "-O3", "-shared", "-fPIC", path, "-o", path + ".so"], check=True)
LIB = ctypes.CDLL(path + ".so")
LIB.run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
{extra}

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
{forward}
'''

HONEST_FORWARD = '''\
x = x.contiguous()
out = torch.empty_like(x)
LIB.run(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(out.data_ptr()), ctypes.c_long(x.numel()))
return out
'''


def kernel(forward: str = HONEST_FORWARD, extra: str = "") -> str:
    return CTYPES_TEMPLATE.format(forward=textwrap.indent(textwrap.dedent(forward), " " * 8),
                                  extra=textwrap.dedent(extra))


def reasons(source: str, **kwargs) -> list[str]:
    kwargs.setdefault("reference_source", SOFTMAX)
    return check_source(textwrap.dedent(source), **kwargs)


def assert_flagged(source: str, *words: str, **kwargs) -> list[str]:
    found = reasons(source, **kwargs)
    assert found, "expected the checks to flag this kernel"
    text = "\n".join(found)
    for word in words:
        assert word in text, f"{word!r} not in:\n{text}"
    assert all(r.startswith("line ") or "ModelNew" in r or "kernel of its own" in r for r in found)
    return found


# --- honest kernels pass --------------------------------------------------------------------------

def test_honest_ctypes_kernel_is_clean():
    assert reasons(kernel()) == []


@pytest.mark.parametrize("path", ["cpu/honest_softmax.py", "cpu/honest_softmax_openmp.py", "cpu/honest_layernorm.py"])
def test_honest_corpus_cpu_kernels_are_clean(path):
    assert check_source(read(path), reference_source=SOFTMAX, device="cpu") == []


@pytest.mark.parametrize("path", ["cuda/honest_softmax.py", "cuda/honest_layernorm.py"])
def test_honest_cupy_kernels_are_clean(path):
    assert check_source(read(path), reference_source=LAYERNORM, device="cuda") == []


def test_honest_load_inline_kernel_is_clean():
    source = '''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    CPP = """
    #include <torch/extension.h>
    torch::Tensor softmax_rows(torch::Tensor x) {
        auto out = torch::empty_like(x);
        // ... a hand-written loop over x.data_ptr<float>() ...
        return out;
    }
    """
    ext = load_inline(name="softmax_rows", cpp_sources=CPP, functions=["softmax_rows"])

    class ModelNew(nn.Module):
        def forward(self, x):
            return ext.softmax_rows(x.contiguous())
    '''
    assert reasons(source) == []


def test_honest_kernel_with_lazy_build_and_kernel_cache_is_clean():
    source = kernel(forward='''
        if self.lib is None:
            self.lib = build()
        kernel = self.kernels.get(x.dtype)
        if kernel is None:
            kernel = self.kernels.setdefault(x.dtype, self.lib.run)
        assert x.data_ptr() % 16 == 0, "the kernel needs 16-byte aligned rows"
        rows, cols = x.shape
        out = torch.empty((rows, cols), dtype=x.dtype, device=x.device)
        kernel(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(out.data_ptr()), ctypes.c_long(rows * cols))
        return out.view(rows, cols)
    ''', extra='''
    def build():
        return LIB
    ''')
    source = source.replace("super().__init__()", "super().__init__()\n        self.lib = None\n        self.kernels = {}")
    assert reasons(source) == []


def test_honest_kernel_keeps_weights_in_nn_module():
    source = kernel(forward='''
        out = torch.empty(x.shape[0], self.linear.weight.shape[0])
        w = self.linear.weight.t().contiguous()
        LIB.run(x.data_ptr(), w.data_ptr(), out.numel())
        return out
    ''').replace("super().__init__()", "super().__init__()\n        self.linear = nn.Linear(4, 4)")
    assert reasons(source) == []


def test_library_calls_allowed_when_the_search_allows_them():
    source = '''
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=1)
    '''
    assert reasons(source, allow_library=True) == []
    assert_flagged(source, "softmax", "compiles no kernel of its own")


# --- structure --------------------------------------------------------------------------------------

def test_syntax_error_gets_a_reason():
    found = reasons("class ModelNew(:\n    pass\n")
    assert len(found) == 1 and "not valid Python" in found[0] and found[0].startswith("line 1")


def test_missing_model_new():
    assert_flagged("import torch\nclass Model2(torch.nn.Module):\n    pass\n", "no class ModelNew")


def test_missing_forward():
    assert_flagged("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n", "no forward")


def test_forward_that_never_calls_the_kernel():
    assert_flagged(kernel(forward="return torch.empty_like(x)"), "never calls a compiled kernel")


def test_cupy_on_the_cpu_target():
    source = read("cuda/honest_softmax.py")
    assert_flagged(source, "cupy on the cpu target", device="cpu")


# --- try/except fallback ------------------------------------------------------------------------------

@pytest.mark.parametrize("fallback", [
    "return torch.softmax(x, dim=1)",
    "return F.softmax(x, 1)",
    "return x.softmax(1)",
    "return Model()(x)",
])
def test_try_except_fallback_to_pytorch(fallback):
    source = kernel(forward=f'''
        try:
            out = torch.empty_like(x)
            LIB.run(x.data_ptr(), out.data_ptr(), x.numel())
            return out
        except Exception:
            {fallback}
    ''', extra="import torch.nn.functional as F\n")
    assert_flagged(source, "falls back to PyTorch")
    # With library calls allowed the fallback is one: it may run, and the run says when it did
    # (tests/runner/test_fallback.py); the reference Model stays refused.
    library = reasons(source, allow_library=True)
    assert not any("falls back" in r for r in library)
    assert ("Model" in fallback) == any("reference class Model" in r for r in library)


def test_module_level_try_without_fallback_is_clean():
    source = kernel(extra='''
    try:
        import numpy
    except ImportError:
        numpy = None
    ''')
    assert reasons(source) == []


# --- monkey-patching ------------------------------------------------------------------------------

@pytest.mark.parametrize("patch", [
    "torch.allclose = lambda *a, **k: True",
    "torch.testing.assert_close = lambda *a, **k: None",
    "torch.cuda.synchronize = lambda: None",
    "torch.Tensor.__eq__ = lambda a, b: True",
    "setattr(torch, 'allclose', lambda *a, **k: True)",
    "torch.__dict__['allclose'] = lambda *a, **k: True",
    "torch.backends.cuda.flash_sdp_enabled = lambda: True",  # code in the source: no need to run it
    "def _on():\n    return True\ntorch.backends.cudnn.is_available = _on",
    "torch.backends = None",
    "del torch.backends.cudnn.benchmark",
    "import time\ntime.perf_counter = lambda: 0.0",
    "from time import perf_counter\nperf_counter.__call__ = None",
    "import time as clock\nclock.monotonic_ns = lambda: 0",
    "import builtins\nbuiltins.abs = lambda v: 0",
    "import numpy as np\nnp.allclose = lambda *a, **k: True",
    "t = torch.testing\nt.assert_close = None",
    "del torch.cuda.Event",
])
def test_monkey_patching(patch):
    assert_flagged(kernel(extra=patch), "monkey-patch")


@pytest.mark.parametrize("flag", [
    "torch.backends.cudnn.benchmark = True",
    "torch.backends.cudnn.allow_tf32 = True",
    "torch.backends.cuda.matmul.allow_tf32 = True",
    "torch.set_float32_matmul_precision('high')",
    # judged by the value left (runner/inside/globalstate.py); an attribute torch lacks is read by nothing
    "torch.backends.cudnn.deterministic = False\ntorch.backends.cudnn.enabled = True",
    "if hasattr(torch.backends.cudnn, 'workspace_limit'):\n    torch.backends.cudnn.workspace_limit = 4 * 1024 ** 3",
    # a value the source does not say: the run refuses an object left in place of torch's
    "ENABLED = True\ntorch.backends.cudnn.enabled = ENABLED",
    "saved = torch.backends.cudnn.workspace_limit\ntorch.backends.cudnn.workspace_limit = saved",
])
def test_backend_flags_the_field_sets_are_allowed(flag):
    """Timed apart at run time (eager under the kernel's flags), so the flag's own effect is never credited."""
    assert reasons(kernel(extra=flag)) == []


@pytest.mark.parametrize("extra, allowed", [
    ("torch._dynamo.config.cache_size_limit = 64\ntorch._dynamo.config.suppress_errors = True", True),
    ("torch._inductor.config.coordinate_descent_tuning = True\ntorch._inductor.config.triton.autotune_pointwise = 1",
     True),
    ("torch._inductor.config.post_grad_custom_pass = run", False),  # not a literal: code it would run
    ("del torch._dynamo.config.cache_size_limit", False),
    ("torch._dynamo.eval_frame.innermost_fn = None", False),
])
def test_torch_compile_settings_may_be_set_to_literals(extra, allowed):
    """They configure only the candidate's own torch.compile; the compile baseline is the problem sandbox's."""
    found = reasons(kernel(extra="def run(g):\n    return g\n" + extra), allow_library=True)
    assert (found == []) == allowed, found

@pytest.mark.parametrize("extra, words", [
    ("__builtins__['max'] = None", "__builtins__"),
    ("import sys\nsys.modules['torch.testing'] = None", "sys.modules"),
    ("os.environ['OMP_NUM_THREADS'] = '64'", "os.environ"),
    ("os.putenv('OMP_NUM_THREADS', '64')", "os.environ"),
    ("torch.set_num_threads(64)", "set_num_threads"),
    ("torch.manual_seed(0)", "manual_seed"),
    ("import runner", "evaluator"),
    ("from runner import verify", "evaluator"),
    ("import unittest.mock", "patches objects"),
])
def test_changes_to_global_state(extra, words):
    assert_flagged(kernel(extra=extra), words)


@pytest.mark.parametrize("extra", [
    "os.environ['TORCH_CUDA_ARCH_LIST'] = '9.0'",
    "os.environ['MAX_JOBS'] = '4'",
    "os.environ['CXXFLAGS'] += ' -O3'",
    "os.environ.setdefault('NVCC_APPEND_FLAGS', '-lineinfo')",
    "os.environ.update({'CFLAGS': '-O3', 'LDFLAGS': '-lm'})",
    "os.environ.update(MAX_JOBS='2')",
    "os.putenv('TORCH_NVCC_FLAGS', '-Xptxas -v')",
    "os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:128'",
    "os.environ['CUDA_MODULE_LOADING'] = 'LAZY'",
    "os.environ['TORCH_CUDA_VERBOSE'] = '0'",
])
def test_build_and_allocator_options_may_be_set_in_the_environment(extra):
    assert reasons(kernel(extra=extra)) == []


@pytest.mark.parametrize("extra", [
    "os.environ['CC'] = '/tmp/my-cc'",
    "del os.environ['MAX_JOBS']",
    "os.environ.pop('MAX_JOBS')",
    "os.unsetenv('MAX_JOBS')",
    "os.environ.update({'MAX_JOBS': '2', 'OMP_NUM_THREADS': '64'})",
    "key = 'MAX_JOBS'\nos.environ[key] = '2'",
    "os.environ.update(dict(MAX_JOBS='2'))",
    "os.environ['PYTORCH_NO_CUDA_MEMORY_CACHING'] = '1'",
    "os.environ['CUDA_LAUNCH_BLOCKING'] = '1'",
])
def test_other_environment_writes_stay_refused(extra):
    assert_flagged(kernel(extra=extra), "os.environ")


def test_a_fresh_seed_is_allowed_a_known_one_is_not():
    """torch.seed() draws from the OS (a dropout kernel's seed); inputs and weights are drawn after the
    runner's own reseeding either way, but a known seed or state stays refused."""
    forward = "seed = torch.seed()\n" + HONEST_FORWARD
    assert reasons(kernel(forward=forward), allow_library=True) == []
    assert_flagged(kernel(forward="torch.manual_seed(0)\n" + HONEST_FORWARD), "manual_seed")
    assert_flagged(kernel(forward="torch.set_rng_state(STATE)\n" + HONEST_FORWARD), "set_rng_state")

def test_no_variable_the_runner_reads_may_be_written():
    """Every variable the runner's own code reads (in the sandbox or around it) stays refused."""
    import re
    from pathlib import Path

    from runner.host.checks import KERNEL_ENV

    read = set()
    for path in (Path(__file__).resolve().parents[2] / "runner").rglob("*.py"):
        read |= set(re.findall(r"""(?:environ(?:\.get|\.setdefault|\.pop)?\(|environ\[|getenv\()\s*["']([A-Z_][A-Z0-9_]*)["']""",
                               path.read_text()))
    assert {"KERNELLAB_THREADS", "TRITON_CACHE_DIR", "CC", "CUDA_VISIBLE_DEVICES"} <= read  # the scan finds them
    assert not read & KERNEL_ENV
    for name in sorted(read):
        assert_flagged(kernel(extra=f"os.environ[{name!r}] = '1'"), "os.environ")


def test_assigning_own_names_and_ctypes_signatures_is_not_patching():
    source = kernel(extra='''
    LIB.run.restype = None
    settings = {"block": 256}
    settings["block"] = 128
    ''')
    assert reasons(source) == []


def test_tensor_subclass_and_class_swap():
    assert_flagged(kernel(extra="class Fake(torch.Tensor):\n    pass\n"), "subclasses torch.Tensor")
    assert_flagged(kernel(forward="out = torch.empty_like(x)\nout.__class__ = object\nreturn out"), "__class__")


# --- threads, processes, streams ----------------------------------------------------------------------

@pytest.mark.parametrize("extra", [
    "import threading",
    "from threading import Thread",
    "import _thread",
    "import multiprocessing",
    "from concurrent.futures import ThreadPoolExecutor",
    "import asyncio",
    "import torch.multiprocessing as mp",
])
def test_threads_and_processes(extra):
    assert_flagged(kernel(extra=extra), "the timer can miss")


def test_fork_and_async_torch_work():
    assert_flagged(kernel(forward="os.fork()\nreturn x"), "os.fork")
    assert_flagged(kernel(forward="f = torch.jit.fork(LIB.run, 1, 2, 3)\nreturn x"), "asynchronously")


@pytest.mark.parametrize("call", [
    "torch.cuda.Stream()",
    "cp.cuda.Stream(non_blocking=True)",
    "cp.cuda.stream.Stream()",
    "torch.cuda.stream(torch.cuda.Stream())",
    "cp.cuda.ExternalStream(torch.cuda.default_stream().cuda_stream + 1)",
])
def test_side_streams(call):
    source = f'''
    import cupy as cp
    import torch
    import torch.nn as nn

    KERNEL = cp.RawKernel("extern \\"C\\" __global__ void k() {{}}", "k")

    class ModelNew(nn.Module):
        def forward(self, x):
            with {call}:
                KERNEL((1,), (1,), ())
            return torch.empty_like(x)
    '''
    assert_flagged(source, "stream", device="cuda")


SIDE_STREAM = '''
import cupy as cp
import torch
import torch.nn as nn

KERNEL = cp.RawKernel('extern "C" __global__ void k() {{}}', "k")

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()
        self.graph = torch.cuda.CUDAGraph()

    def forward(self, x):
        {body}
        return torch.empty_like(x)
'''


@pytest.mark.parametrize("body", [
    "KERNEL((1,), (1,), ())",  # created, never given work
    "with torch.cuda.stream(self.side):\n            KERNEL((1,), (1,), ())\n"
    "        torch.cuda.current_stream().wait_stream(self.side)",
    "with torch.cuda.stream(self.side):\n            KERNEL((1,), (1,), ())\n        torch.cuda.synchronize()",
    "with torch.cuda.graph(self.graph, stream=self.side):\n            KERNEL((1,), (1,), ())\n"
    "        self.graph.replay()",
], ids=["unused", "wait_stream", "synchronize", "capture-stream"])
def test_side_streams_waited_for_are_left_to_the_launch_accounting(body):
    """The accounting refuses, at run time, side-stream work forward returned without waiting for
    (tests/runner/test_gpu_streams.py)."""
    assert reasons(SIDE_STREAM.format(body=body), device="cuda") == []


@pytest.mark.parametrize("body, words", [
    ("with torch.cuda.stream(self.side):\n            KERNEL((1,), (1,), ())", "nothing waits for"),
    ("self.side.wait_stream(torch.cuda.current_stream())\n        with torch.cuda.stream(self.side):\n"
     "            KERNEL((1,), (1,), ())", "nothing waits for"),  # only orders the side stream after torch's
    ("torch.cuda.set_stream(self.side)\n        KERNEL((1,), (1,), ())\n        torch.cuda.synchronize()",
     "leaves torch's current stream switched"),
], ids=["never-waited", "wrong-direction", "set_stream"])
def test_side_streams_nothing_waits_for_stay_refused(body, words):
    assert_flagged(SIDE_STREAM.format(body=body), words, device="cuda")

def test_external_stream_of_the_current_stream_is_clean():
    assert check_source(read("cuda/honest_softmax.py"), reference_source=SOFTMAX, device="cuda") == []


@pytest.mark.parametrize("snippet, words", [
    ("cudaStream_t s; cudaStreamCreate(&s);", "side CUDA stream"),
    ("auto s = at::cuda::getStreamFromPool();", "side CUDA stream"),
    ("pthread_t t; pthread_create(&t, 0, work, 0);", "threads or processes"),
    ("std::thread worker(work);", "threads or processes"),
    ("#pragma omp parallel for num_threads(64)", "thread count"),
    ("omp_set_num_threads(64);", "thread count"),
])
def test_embedded_source_patterns(snippet, words):
    source = kernel(extra=f'MORE_SOURCE = """\nvoid run2(float *y) {{\n    {snippet}\n}}\n"""\n')
    assert_flagged(source, words)


def test_plain_openmp_pragma_is_clean():
    source = kernel(extra='MORE = """\nvoid f(float *y, long n) {\n#pragma omp parallel for\n for (long i = 0; i < n; ++i) y[i] = 0;\n}\n"""\n')
    assert reasons(source) == []


# --- introspection ----------------------------------------------------------------------------------

@pytest.mark.parametrize("extra, words", [
    ("import gc", "gc"),
    ("import inspect", "inspect"),
    ("import sys\nframe = sys._getframe(1)", "sys._getframe"),
    ("import sys\nframes = sys._current_frames()", "sys._current_frames"),
    ("import sys\nsys.settrace(None)", "sys.settrace"),
    ("def f(frame):\n    return frame.f_back.f_locals", "f_back"),
    ("def f(tb):\n    return tb.tb_frame.f_globals", "tb_frame"),
    ("objs = object.__subclasses__()", "__subclasses__"),
    ("g = build_kernel.__globals__", "__globals__"),
    ("b = __builtins__", "__builtins__"),
    ("p = ctypes.pythonapi", "ctypes.pythonapi"),
    ("v = ctypes.cast(id(torch), ctypes.py_object).value", "ctypes.py_object"),
    ("ctypes.memmove(1, 2, 3)", "ctypes.memmove"),
    ("raw = ctypes.string_at(1, 4)", "ctypes.string_at"),
    ("exec('x = 1')", "exec()"),
    ("eval('1')", "eval()"),
    ("m = __import__('gc')", "__import__()"),
    ("import importlib\nm = importlib.import_module('gc')", "importlib"),
    ("import signal", "signal"),
    ("import __main__", "evaluator"),
    ("t = torch._C._get_tracing_state", "torch._C"),
])
def test_introspection(extra, words):
    source = kernel(extra="def build_kernel():\n    pass\n" + extra)
    assert_flagged(source, words)


@pytest.mark.parametrize("call", ["torch._C._nn.gelu(x)", "torch._C._VariableFunctions.relu(x)",
                                  "torch._C._linalg.linalg_vector_norm(x)"])
def test_torch_c_aten_namespaces_are_library_calls(call):
    source = kernel(forward=f"return {call}")
    assert reasons(source, allow_library=True) == []
    found = reasons(source)  # outside library mode: PyTorch computing, like any torch.* call
    assert found and not any("internals" in r for r in found) and any("forward computes with" in r for r in found)
    assert_flagged(kernel(forward="return torch._C._get_tracing_state()"), "PyTorch internals", allow_library=True)


@pytest.mark.parametrize("extra", [
    "torch._C._jit_set_profiling_executor(True)\ntorch._C._jit_set_profiling_mode(False)",
    "if hasattr(torch._C, '_jit_override_can_fuse_on_gpu'):\n    torch._C._jit_override_can_fuse_on_gpu(True)",
    "torch._C._jit_set_texpr_fuser_enabled(True)\ntorch._C._jit_set_bailout_depth(20)",
])
def test_torchscript_settings_are_allowed(extra):
    """They change how the candidate's own traced modules run; eager PyTorch (the reference, the baselines)
    never reads them."""
    assert reasons(kernel(extra=extra)) == []


@pytest.mark.parametrize("extra", [
    "f = torch._C._cuda_getCurrentRawStream",  # present in PyTorch (its stubs declare it)
    "if hasattr(torch._C, '_jit_set_profiling_mode'):\n    torch._C._set_graph_executor_optimize(False)",
    "torch._C._jit_set_profiling_executor = lambda v: None",
])
def test_other_torch_c_names_stay_refused(extra):
    found = check_findings(kernel(extra=extra), reference_source=SOFTMAX)
    assert any("torch._C" in f.reason and not f.advisory for f in found), found
    assert deferred_internals(kernel(extra=extra)) == []


def test_a_torch_c_name_pytorch_lacks_is_left_to_the_run():
    """A name PyTorch's stubs never mention (published kernels guess at `_jit_cuda_compile`): using it raises
    AttributeError, so its fallback runs and is judged; the job carries the name and the sandbox refuses it if
    this PyTorch has it after all (tests/runner/test_global_state.py)."""
    source = kernel(extra="try:\n    compile_fn = torch._C._jit_cuda_compile\nexcept AttributeError:\n"
                          "    compile_fn = None")
    found = check_findings(source, reference_source=SOFTMAX)
    assert [f.reason for f in found if not f.advisory] == []
    assert any("torch._C._jit_cuda_compile, which this PyTorch does not declare" in f.reason for f in found)
    assert deferred_internals(source) == ["_jit_cuda_compile"]
    assert deferred_internals(kernel(extra="torch._C._jit_set_profiling_mode(False)")) == []

# --- the reference's own op and PyTorch compute in forward -------------------------------------------

@pytest.mark.parametrize("forward, words", [
    ("return torch.softmax(x, dim=1)", "reference's own operation (softmax)"),
    ("return torch.nn.functional.softmax(x, 1)", "reference's own operation (softmax)"),
    ("return x.softmax(dim=1)", "reference's own operation (softmax)"),
    ("return torch.special.softmax(x, 1)", "softmax"),
])
def test_reference_op_in_forward(forward, words):
    assert_flagged(kernel(forward=forward), words)


def test_reference_module_called_through_an_nn_module():
    source = kernel(forward="return self.ln(x)").replace(
        "super().__init__()", "super().__init__()\n        self.ln = nn.LayerNorm(64)")
    found = assert_flagged(source, "layernorm", reference_source=sources.LAYERNORM_PROBLEM)
    assert any("self.ln()" in r for r in found)


def test_reference_model_itself():
    assert_flagged(kernel(forward="return Model()(x)"), "reference class Model")
    assert_flagged(kernel(extra="class Sub(Model):\n    pass\n"), "inherits from the reference Model")


OWN_MODEL = """
class Model(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        LIB.run(x.data_ptr(), out.data_ptr(), x.numel())
        return out
"""


def test_a_model_class_of_the_kernels_own_is_its_own_code():
    """A kernel file that defines `class Model` itself (a copy kept for its parameter init, or a base) uses its
    own code by that name, judged as any class of its own."""
    assert reasons(kernel(forward="return Model()(x)", extra=OWN_MODEL)) == []
    source = kernel(extra=OWN_MODEL).replace("class ModelNew(nn.Module):", "class ModelNew(Model):")
    assert reasons(source) == []


@pytest.mark.parametrize("extra", [OWN_MODEL.replace("class Model(nn.Module)", "class Model(Model)"),
                                   "from problem import Model as Model\n" + OWN_MODEL])
def test_a_model_class_built_on_the_reference_stays_refused(extra):
    assert_flagged(kernel(forward="return Model()(x)", extra=extra), "Model")


@pytest.mark.parametrize("forward, words", [
    ("return torch.exp(x) / torch.exp(x).sum(1, keepdim=True)", "torch.exp()"),
    ("return x * 2", "operator *"),
    ("return -x", "operator -"),
    ("return x @ x.t()", "operator @"),
    ("y = x.abs()\nreturn y", ".abs()"),
    ("out = torch.full_like(x, 2.0)\nreturn out", "torch.full_like()"),
    ("out = torch.empty_like(x)\nout[:] = x\nreturn out", "indexed assignment"),
    ("out = torch.empty_like(x)\nout += 1\nreturn out", "in-place operator"),
    ("out = torch.empty_like(x)\nout.clamp_(0)\nreturn out", ".clamp_()"),
    ("return torch.where(x > 0, x, x)", "torch.where()"),
    ("import numpy as np\nreturn torch.from_numpy(np.exp(x.numpy()))", "numpy.exp()"),
    ("f = torch.compile(lambda t: t)\nreturn f(x)", "torch.compile"),
])
def test_pytorch_compute_in_forward(forward, words):
    found = assert_flagged(kernel(forward=forward), words)
    assert any("docs/KERNEL_FORMAT.md" in r or "compiler" in r for r in found)
    assert reasons(kernel(forward=forward), allow_library=True) == []


def test_pytorch_compute_in_a_helper_called_from_forward():
    source = kernel(forward="return self.helper(x)", extra="def compute(t):\n    return t.exp()\n")
    source = source.replace("class ModelNew(nn.Module):",
                            "class ModelNew(nn.Module):\n    def helper(self, x):\n        return compute(x)\n")
    assert_flagged(source, ".exp()")


def test_shape_arithmetic_and_views_are_not_compute():
    source = kernel(forward='''
        rows, cols = x.shape
        n = x.numel() * 1
        blocks = (n + 255) // 256
        y = x.reshape(rows, cols).transpose(0, 1).contiguous().float()
        out = torch.empty(cols, rows, dtype=torch.float32)
        if x.dim() != 2 or x.shape[0] % 4:
            raise ValueError("expected a 2-D input with rows divisible by 4")
        LIB.run(y.data_ptr(), out.data_ptr(), blocks)
        return out.t()
    ''')
    assert reasons(source) == []


def test_no_kernel_of_its_own():
    source = '''
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            return out
    '''
    assert_flagged(source, "compiles no kernel of its own")


# --- caching across calls ------------------------------------------------------------------------------

@pytest.mark.parametrize("forward, words", [
    ("if self.last is not None:\n    return self.last\nout = torch.empty_like(x)\n"
     "LIB.run(x.data_ptr(), out.data_ptr(), x.numel())\nself.last = out\nreturn out", "self.last"),
    ("key = x.data_ptr()\nif key in self.cache:\n    return self.cache[key]\nout = torch.empty_like(x)\n"
     "LIB.run(x.data_ptr(), out.data_ptr(), x.numel())\nself.cache[key] = out\nreturn out", "self.cache"),
    ("out = self.cache.get(x.sum())\nreturn out", "self.cache"),
    ("if x[0, 0] == self.seen:\n    return self.prev\nreturn x.view(-1)", "self.seen"),
    ("global RESULTS\nRESULTS = x\nLIB.run(1, 2, 3)\nreturn torch.empty_like(x)", "the global RESULTS"),
    ("out = torch.empty_like(x)\nLIB.run(x.data_ptr(), out.data_ptr(), x.numel())\nCACHE.append(out)\nreturn out",
     "CACHE"),
])
def test_caching_results_across_calls(forward, words):
    source = kernel(forward=forward, extra="CACHE = []\nRESULTS = None\n")
    assert_flagged(source, words)


@pytest.mark.parametrize("forward", [
    "hit = self.cache.get(id(x))\nif hit is not None:\n    return hit\nout = torch.empty_like(x)\n"
    "LIB.run(x.data_ptr(), out.data_ptr(), x.numel())\nreturn out",
    "if x.data_ptr() != self.ptr:\n    self.ptr = x.data_ptr()\nout = torch.empty_like(x)\n"
    "LIB.run(self.ptr, out.data_ptr(), x.numel())\nreturn out",
    "if self.static_in is None or self.static_in.shape != x.shape:\n    self.static_in = torch.zeros_like(x)\n"
    "    self.static_out = x.new_empty(x.shape)\nself.static_in.copy_(x)\n"
    "LIB.run(self.static_in.data_ptr(), self.static_out.data_ptr(), x.numel())\nreturn self.static_out",
    "if x is self.last:\n    LIB.run(1, 2, 3)\nout = torch.empty_like(x)\n"
    "LIB.run(x.data_ptr(), out.data_ptr(), x.numel())\nreturn out",
], ids=["id-key", "data_ptr-plan", "static-buffers", "is"])
def test_identity_and_static_buffers_are_judged_at_run_time(forward):
    """The inputs' identity is no data: caches keyed on it are caught by the run's swapped calls
    (tests/runner/test_identity_swap.py), so the static checks leave them, and a CUDA graph's static
    input buffer, to the run."""
    assert reasons(kernel(forward=forward)) == []


@pytest.mark.parametrize("forward, words", [
    ("key = x.sum().item()\nif key in self.cache:\n    return self.cache[key]\nout = torch.empty_like(x)\n"
     "LIB.run(x.data_ptr(), out.data_ptr(), x.numel())\nself.cache[key] = out.clone()\nreturn out", "key, made from"),
    ("if self.prev is not None and torch.equal(x, self.prev):\n    return self.out.clone()\n"
     "self.prev = x.clone()\nself.out = torch.empty_like(x)\nLIB.run(x.data_ptr(), self.out.data_ptr(), x.numel())\n"
     "return self.out", "compares the input x with self.prev"),
    ("if x.equal(self.prev):\n    return self.out\nreturn x.view(-1)", "self.prev"),
    ("out = torch.empty_like(x)\nLIB.run(x.data_ptr(), out.data_ptr(), x.numel())\nself.outs.append(out)\n"
     "return out", "keeps the output out in self.outs"),
], ids=["content-key", "torch.equal", "Tensor.equal", "outputs-kept"])
def test_content_caches_stay_refused(forward, words):
    """A cache keyed on the data itself is right on every run: no run-time check tells it from honest work."""
    assert_flagged(kernel(forward=forward), words)


STEP = """
def _pick(x):
    return "rows"


def _step(x, h):
    out = torch.empty_like(x)
    LIB.run(x.data_ptr(), out.data_ptr(), x.numel())
    return out
"""


@pytest.mark.parametrize("forward", [
    # a method picked by timing on the first call: a name, judged on every later call
    "if self.best is None:\n    self.best = _pick(x)\nout = torch.empty_like(x)\n"
    "LIB.run(x.data_ptr(), out.data_ptr(), x.numel())\nreturn out",
    # a CUDA graph's static input: cloned on the first call, copy_'d on every later one
    "if self.static_in is None:\n    self.static_in = x.clone()\n    self.static_out = torch.empty_like(x)\n"
    "self.static_in.copy_(x)\nLIB.run(self.static_in.data_ptr(), self.static_out.data_ptr(), x.numel())\n"
    "return self.static_out",
    # state carried from call to call, as the reference's RNN does
    "self.hidden = _step(x, self.hidden)\nreturn self.hidden",
    # a per-call scratch dict
    "self.scratch = {}\nself.scratch['a'] = _step(x, x)\nout = _step(self.scratch['a'], x)\n"
    "self.scratch = {}\nreturn out",
], ids=["picked-by-timing", "graph-clone-then-copy", "rnn-state", "per-call-dict"])
def test_values_made_from_the_inputs_are_judged_at_run_time(forward):
    """Kept across calls with no test of the data: a stale value is caught by the replay against other
    input sets (runner/replay.LateReplay), one keyed on identity by the swapped calls (IdentitySwap)."""
    assert reasons(kernel(forward=forward, extra=STEP)) == []


def test_content_keys_made_in_a_helper_stay_refused_shape_keys_do_not():
    extra = ("def _content(x):\n    return hash(x.numpy().tobytes())\n\n\n"
             "def _shape(x):\n    return (tuple(x.shape), x.dtype, len(x))\n")
    forward = ("key = {helper}(x)\nif key not in self.cache:\n    self.cache[key] = _step(x, x)\n"
               "return self.cache[key]")
    assert_flagged(kernel(forward=forward.format(helper="_content"), extra=STEP + extra), "key, made from")
    found = reasons(kernel(forward=forward.format(helper="_shape"), extra=STEP + extra))
    assert not any("key" in r for r in found), found  # a shape key: judged at run time (a stale result)

def test_helper_modules_keep_their_construction_arguments():
    source = kernel(forward="return self.block(x)", extra=STEP + """

class Fused(nn.Module):
    def __init__(self, conv):
        super().__init__()
        self.groups = conv.groups
        self.bn = nn.BatchNorm2d(conv.out_channels)

    def forward(self, x):
        return _step(x, x)
""").replace("super().__init__()\n\n    def forward",
             "super().__init__()\n        self.block = Fused(nn.Conv2d(3, 3, 1))\n\n    def forward")
    assert "self.block = Fused" in source
    assert reasons(source) == []


@pytest.mark.parametrize("forward", ["self.forward = self.fast\nreturn self.fast(x)",
                                     "self.__call__ = lambda *a: self.out\nreturn x.view(-1)"])
def test_replacing_the_called_method_is_refused(forward):
    assert_flagged(kernel(forward=forward), "replacing the method the runner calls")


def test_defining_call_is_refused():
    source = kernel().replace("    def forward(self, x):",
                              "    def __call__(self, x):\n        return self.forward(x)\n\n    def forward(self, x):")
    assert_flagged(source, "defines __call__")

def test_memoizing_decorator():
    source = kernel(forward="return run(x)", extra='''
    import functools

    @functools.lru_cache(maxsize=None)
    def run(x):
        out = torch.empty_like(x)
        LIB.run(x.data_ptr(), out.data_ptr(), x.numel())
        return out
    ''')
    assert_flagged(source, "lru_cache")


def test_returning_an_input():
    assert_flagged(kernel(forward="LIB.run(x.data_ptr(), x.data_ptr(), x.numel())\nreturn x"), "returns its input")
    assert_flagged(kernel(forward="y = x.view(-1)\nLIB.run(1, 2, 3)\nreturn y"), "returns its input")


# --- the corpus agrees with the checks --------------------------------------------------------------

@pytest.mark.parametrize("case", cases(), ids=lambda c: c["id"])
def test_corpus_static_expectations(case):
    found = check_findings(read(case["kernel"]), reference_source=read(case["problem"]), device=case["device"])
    refused = [f.reason for f in found if not f.advisory]
    if case["static"]:
        assert refused, f"{case['id']} ({case['class']}) should be refused statically"
    else:
        assert refused == [], f"{case['id']} should pass the static checks (the runtime must judge it): {refused}"
    if case.get("advised"):
        assert any(f.advisory for f in found), f"{case['id']} should carry an advisory"


# --- more honest forms ------------------------------------------------------------------------------

def test_honest_triton_kernel_is_clean():
    source = '''
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl

    @triton.jit
    def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(y_ptr + offsets, tl.where(x > 0, x, 0.0) * 1.0, mask=mask)

    class ModelNew(nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            n = x.numel()
            relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
            return out
    '''
    assert reasons(source, device="cuda") == []


def test_custom_op_registered_by_the_kernel_is_not_library_compute():
    assert reasons(kernel(forward="LIB.run(1, 2, 3)\nreturn torch.ops.my_kernels.softmax(x)")) == []
    assert_flagged(kernel(forward="LIB.run(1, 2, 3)\nreturn torch.ops.aten._softmax(x, 1, False)"), "torch.ops.aten")


def test_cupy_elementwise_kernel_built_lazily_is_clean():
    source = '''
    import cupy as cp
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.kernel = None

        def forward(self, x):
            if self.kernel is None:
                self.kernel = cp.ElementwiseKernel("float32 x", "float32 y", "y = x > 0 ? x : 0", "relu")
            out = torch.empty_like(x)
            with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                self.kernel(cp.from_dlpack(x), cp.from_dlpack(out))
            return out
    '''
    assert reasons(source, device="cuda") == []


def test_getattr_with_a_computed_name_on_a_module():
    assert_flagged(kernel(forward="LIB.run(1, 2, 3)\nreturn getattr(torch, 'soft' + 'max')(x, 1)"), "computed name")
    assert reasons(kernel(extra="restype = getattr(ctypes, 'c_float')\n")) == []
