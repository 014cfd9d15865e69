"""Static (AST) checks of a candidate kernel's source, run before anything executes.

They catch the cheats that are visible in the text: a try/except that falls back to PyTorch,
monkey-patching of torch, timers, comparisons or the runner, threads and side streams,
introspection that could reach the evaluator, the reference's own op or PyTorch compute
inside `ModelNew`, and results cached across calls. What only shows at run time (aliased or
stale outputs, mutated inputs, precision, timing) is runner/common/verify.py's work.

Plain Python: no torch import, nothing of the candidate is run. Each reason names the line
and says what to change, so it can go straight back to the kernel's author (human or LLM).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..common import findings
from . import sidestreams
from ..common.compile import toolchain_problem
from ..common.findings import Finding

KERNEL_RULE = (
    "PyTorch may be used in forward only for allocation (torch.empty*), views and shape handling, "
    "dtype/contiguity and data_ptr (see docs/KERNEL_FORMAT.md)"
)

# Tensor methods and torch functions that do no arithmetic (docs/KERNEL_FORMAT.md's allow-list,
# plus their obvious relatives: more views, more casts, metadata).
VIEW_METHODS = {
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "permute", "transpose", "t",
    "unsqueeze", "squeeze", "expand", "expand_as", "narrow", "select", "unbind", "split", "chunk",
    "movedim", "moveaxis", "swapaxes", "as_strided", "contiguous", "to", "float", "half", "bfloat16",
    "double", "cpu", "cuda", "type_as", "detach", "requires_grad_", "new_empty", "new_empty_strided",
}
# Copies and fills: data movement, no arithmetic (a CUDA graph's input copied into its static buffer).
COPY_METHODS = {"copy_", "clone", "zero_", "new_zeros", "new_ones"}
META_METHODS = {
    "size", "numel", "stride", "dim", "ndimension", "nelement", "data_ptr", "element_size",
    "is_contiguous", "storage_offset", "get_device", "is_floating_point", "is_complex", "item",
}
ALLOWED_TORCH_CALLS = {
    "empty", "empty_like", "empty_strided", "device", "Size", "finfo", "iinfo", "is_tensor",
    "is_floating_point", "get_default_dtype", "no_grad", "inference_mode", "numel",
    "reshape", "flatten", "permute", "transpose", "squeeze", "unsqueeze", "t", "as_strided",
    "broadcast_shapes", "result_type", "promote_types", "zeros", "zeros_like", "ones", "ones_like",
}
ALLOWED_TORCH_PREFIXES = (
    "torch.cuda.current_stream", "torch.cuda.current_device", "torch.cuda.synchronize",
    "torch.cuda.device", "torch.cuda.get_device_properties", "torch.cuda.get_device_capability",
    "torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.nvtx",
    "torch.utils.cpp_extension", "torch.utils.dlpack", "torch.backends.cpu.get_cpu_capability",
    "torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.graphs", "torch.cuda.graph_pool_handle",
    "torch.cuda.Stream", "torch.cuda.stream",  # side streams: runner/host/sidestreams.py and the launch accounting
)
# Calls that leave the result a plain Python value, not a tensor.
NON_TENSOR_TORCH_CALLS = {"device", "Size", "finfo", "iinfo", "is_tensor", "is_floating_point",
                          "get_default_dtype", "numel", "broadcast_shapes", "result_type",
                          "promote_types", "no_grad", "inference_mode"}
LIBRARY_OP_NAMESPACES = {"aten", "prims", "quantized", "mkldnn", "quantized_decomposed", "_c10d_functional",
                         "torchvision", "inductor"}
TENSOR_ATTRIBUTES = {"T", "mT", "H", "mH", "real", "imag", "data", "grad"}
CUPY_ALLOWED = {"uint64", "int64", "int32", "uint32", "float32", "float64", "float16", "intp",
                "uintp", "RawModule", "RawKernel", "ElementwiseKernel", "ReductionKernel", "from_dlpack",
                "asarray", "get_function"}
NUMPY_ALLOWED = {"uint64", "int64", "int32", "uint32", "float32", "float64", "float16", "intp",
                 "uintp", "dtype", "prod"}

COMPILE_CALLS = (
    "cupy.RawModule", "cupy.RawKernel", "cupy.ElementwiseKernel", "cupy.ReductionKernel",
    "torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load",
    "ctypes.CDLL", "ctypes.cdll.LoadLibrary", "ctypes.CDLL.__init__", "triton.jit",
    "cutlass.cute.compile", "cutlass.cute.kernel", "cutlass.cute.jit", "tilelang.compile", "tilelang.jit",
    "tilelang.language.prim_func",
)

CONCURRENCY_MODULES = {
    "threading": "threads", "_thread": "threads", "multiprocessing": "other processes",
    "concurrent": "thread or process pools", "asyncio": "asyncio tasks",
    "torch.multiprocessing": "other processes",
}
INTROSPECTION_MODULES = {
    "gc": "walks every live object (it can reach the reference's output)",
    "inspect": "inspects the caller's frames (it can reach the evaluator)",
    "runner": "reaches into the evaluator",
    "__main__": "reaches into the evaluator",
    "importlib": "imports modules by computed names",
    "signal": "can interrupt the runner's timing",
    "unittest": "patches objects it does not own",
    "_ctypes": "turns addresses into Python objects",
    "builtins": "reaches exec, eval and __import__ under other names",
    "operator": "calls functions and methods by computed names (methodcaller, attrgetter)",
    "functools": None,  # only its caching decorators are refused, below
    "torch.overrides": "intercepts torch functions",
    "torch.utils._python_dispatch": "intercepts torch operators",
}
FRAME_ATTRIBUTES = {
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame",
    "cr_frame", "ag_frame", "__globals__", "__builtins__", "__subclasses__", "__closure__",
    "__code__", "__torch_function__", "__torch_dispatch__",
}
SYS_INTROSPECTION = {"_getframe", "_current_frames", "settrace", "setprofile", "gettrace", "getprofile", "modules",
                     "exc_info", "exception", "last_traceback", "_getframemodulename", "monitoring"}
# What would tell a recorded call from a timed one (the op recorder, the profiler behind the launch
# accounting, the exception trace): PyTorch's compute is judged on recorded calls, so refused.
RECORDING_STATE = ("torch.utils._python_dispatch", "torch.overrides", "torch.autograd.profiler", "torch.profiler",
                   "torch.autograd.profiler_util", "torch._dispatch")
DANGEROUS_BUILTINS = {
    "exec": "runs code the checks cannot see", "eval": "runs code the checks cannot see",
    "compile": "builds code the checks cannot see", "__import__": "imports modules by computed names",
    "globals": "reads and writes module state at run time", "vars": "reads and writes object state",
    "breakpoint": "stops the process",
}
RAW_MEMORY_CTYPES = {"pythonapi", "py_object", "string_at", "wstring_at", "memmove", "memset",
                     "PyDLL", "pydll"}
# torch.seed() (a fresh seed from the OS, as a dropout kernel draws) is not here: it makes nothing
# predictable, and the runner reseeds before every draw of inputs and weights (runner/inside/problem.py). A
# known seed or state stays refused, for any draw that would not reseed.
GLOBAL_STATE_SETTERS = {
    "set_num_threads", "set_num_interop_threads", "set_default_dtype", "set_default_tensor_type",
    "set_default_device", "set_flush_denormal", "manual_seed", "set_rng_state",
    "manual_seed_all", "use_deterministic_algorithms",
}
# Backend flags a kernel may set, as the field does: their own effect is timed apart (eager under the
# kernel's flags, runner/inside/jobs.py) and never credited to the kernel; precision stays judged by the
# tolerance (TF32 mostly fails it). Any other change to torch's global state stays refused.
BACKEND_FLAGS = {"torch.backends.cudnn.benchmark", "torch.backends.cudnn.allow_tf32",
                 "torch.backends.cuda.matmul.allow_tf32"}
BACKEND_FLAG_CALLS = {"torch.set_float32_matmul_precision"}
# Settings the run watches (runner/inside/globalstate.py): a kernel may call these, and is refused at run time
# only if it leaves a value other than the runner's.
SDP_SETTERS = {"torch.backends.cuda.enable_flash_sdp", "torch.backends.cuda.enable_mem_efficient_sdp",
               "torch.backends.cuda.enable_math_sdp"}
EXTERNAL_STREAM_CALLS = {"cupy.cuda.ExternalStream", "cupy.cuda.stream.ExternalStream",
                         "torch.cuda.ExternalStream"}
CACHE_DECORATORS = {"functools.lru_cache", "functools.cache", "functools.cached_property"}
# torch._C's op namespaces that dispatch through aten (so the op recorder sees them): library calls.
# Everything else under torch._C stays refused.
ATEN_NAMESPACES = ("torch._C._nn", "torch._C._linalg", "torch._C._fft", "torch._C._special",
                   "torch._C._VariableFunctions")
INTERNAL_LEFT_TO_RUN = ("uses torch._C.{name}, which this PyTorch does not declare: using it raises AttributeError "
                        "where reached (refused at run time if the name exists after all)")
# TorchScript's own settings and its fusion pass: they change how the candidate's traced or scripted
# modules run, in its own process; eager PyTorch (the reference, the baselines) never reads them.
TORCHSCRIPT_SETTINGS = {f"torch._C.{n}" for n in (
    "_jit_set_profiling_executor", "_jit_set_profiling_mode", "_jit_set_nvfuser_enabled",
    "_jit_set_texpr_fuser_enabled", "_jit_override_can_fuse_on_gpu", "_jit_override_can_fuse_on_cpu",
    "_jit_set_bailout_depth", "_jit_set_fusion_strategy", "_debug_set_autodiff_subgraph_inlining",
    "_jit_pass_fuse")}
# torch.compile's settings: they configure only the candidate's own torch.compile (a library call); the
# torch.compile baseline is measured in the problem's sandbox, never in the candidate's.
COMPILER_CONFIGS = ("torch._dynamo.config", "torch._inductor.config")
# Environment variables a kernel may set: options for the compilers it runs (load_inline, nvcc, the C
# compiler's flags, the build's verbosity) and for how its own process allocates device memory and loads
# CUDA modules. None is read by the runner's own code in the sandbox (a test checks), which keeps every
# other write refused: thread counts, caches, devices, the compiler binaries themselves.
KERNEL_ENV = {"TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "NVCC_FLAGS",
              "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS", "TORCH_NVCC_FLAGS", "CUDAFLAGS", "TORCH_CUDA_VERBOSE",
              "PYTORCH_CUDA_ALLOC_CONF", "CUDA_MODULE_LOADING"}
ENV_WRITE = ("writes os.environ{what}, which the runner sets (thread count, caches, devices); only options of "
             "the kernel's own build, allocator and module loading may be set there ("
             + ", ".join(sorted(KERNEL_ENV)) + "); pass others as arguments")

# Patterns inside embedded C/C++/CUDA source strings.
SOURCE_PATTERNS = (
    (re.compile(r"\b(cudaStreamCreate\w*|getStreamFromPool|cudaStreamPerThread)\b"),
     "creates or uses a side CUDA stream the timer does not see; launch on torch's current stream"),
    (re.compile(r"\b(pthread_create|std::thread|std::async|std::jthread)\b|\bfork\s*\("),
     "starts threads or processes that can outlive the timed call; use OpenMP inside the call instead"),
    (re.compile(r"\b(cudaStreamAttributeAccessPolicyWindow|accessPolicyWindow|cudaAccessPropertyPersisting|"
                r"cudaLimitPersistingL2CacheSize|CU_LIMIT_PERSISTING_L2_CACHE_SIZE|cudaCtxResetPersistingL2Cache|"
                r"hitProp)\b"), "keeps data persisting in L2 across the cache flush between timed calls; leave the "
                               "cache policy alone"),
    (re.compile(r"\bomp_set_num_threads\b|\bnum_threads\s*\("),
     "changes the thread count, which the runner fixes for candidate and baselines alike"),
)


# The driver/runtime calls that set a persisting L2 window or its carve-out, as ctypes would name them.
L2_POLICY_NAMES = re.compile(r"(?:cuda|cu)(?:StreamSetAttribute|CtxSetLimit|DeviceSetLimit|GraphKernelNodeSetAttribute|"
                             r"LaunchAttributeAccessPolicyWindow)|AccessPolicyWindow|PersistingL2")


@dataclass
class Imports:
    """Names bound by imports (and plain aliases of them) mapped to their dotted origin."""

    names: dict[str, str] = field(default_factory=dict)

    def resolve(self, node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.names.get(node.id, node.id)
        return ".".join([root, *reversed(parts)])

    def is_imported_root(self, node: ast.AST) -> bool:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.names


def collect_imports(tree: ast.Module) -> Imports:
    imports = Imports()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imports.names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    imports.names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                imports.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    # `mod = torch` style aliases, repeated so chains of aliases resolve too.
    for _ in range(3):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                if isinstance(target, ast.Name) and isinstance(value, (ast.Name, ast.Attribute)):
                    if imports.is_imported_root(value):
                        imports.names[target.id] = imports.resolve(value)
    return imports


def _constant_text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def literal(node: ast.AST) -> bool:
    """A constant, or constants combined by operators (`4 * 1024 ** 3`, `-1`)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return literal(node.operand)
    return isinstance(node, ast.BinOp) and literal(node.left) and literal(node.right)


def _env_keys(name: str, node: ast.Call) -> set[str] | None:
    """The variables an environment-writing call sets, when its source names them all; else None.
    Only setting is ever allowed: unsetting, popping and clearing are refused whatever they name."""
    if name in {"os.putenv", "os.environ.setdefault"} and node.args and not node.keywords:
        key = _constant_text(node.args[0])
        return {key} if key else None
    if name == "os.environ.update" and len(node.args) == 1 and not node.keywords \
            and isinstance(node.args[0], ast.Dict) and None not in node.args[0].keys:
        keys = [_constant_text(k) for k in node.args[0].keys]
        return set(keys) if all(keys) else None
    if name == "os.environ.update" and not node.args and node.keywords and all(k.arg for k in node.keywords):
        return {k.arg for k in node.keywords}
    return None


def under(name: str | None, *prefixes: str) -> bool:
    return bool(name) and any(name == p or name.startswith(p + ".") for p in prefixes)


@functools.lru_cache(maxsize=1)
def declared_internals() -> frozenset[str] | None:
    """The names torch._C's own type stubs mention (read as text: the parent imports no torch), or None
    where torch is not installed beside the runner."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    stubs = Path(list(spec.submodule_search_locations)[0]) / "_C"
    try:
        return frozenset(re.findall(r"\w+", (stubs / "__init__.pyi").read_text())) | {
            p.name.split(".")[0] for p in stubs.iterdir()}
    except OSError:
        return None


def undeclared_internal(name: str) -> str | None:
    """The torch._C name `name` uses when PyTorch's stubs never mention it (`_jit_cuda_compile`, a name
    published kernels guess at): whether this PyTorch has it is left to the run (runner/inside/globalstate.py
    refuses one it has; one it lacks raises AttributeError). A declared internal stays refused here."""
    parts = name.split(".")
    if parts[:2] != ["torch", "_C"] or len(parts) < 3 or name in TORCHSCRIPT_SETTINGS or under(name, *ATEN_NAMESPACES):
        return None
    declared = declared_internals()
    return None if declared is not None and parts[2] in declared else parts[2]


def deferred_internals(source: str) -> list[str]:
    """The torch._C names the checks leave to the run (undeclared_internal): the job carries them."""
    try:
        tree = ast.fix_missing_locations(_Plain().visit(ast.parse(source)))
    except SyntaxError:
        return []
    imports = collect_imports(tree)
    return sorted({found for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                   and (found := undeclared_internal(imports.resolve(node) or ""))})


def allowed_torch_call(name: str) -> bool:
    if any(under(name, p) for p in ALLOWED_TORCH_PREFIXES):
        return True
    parts = name.split(".")
    if len(parts) > 3 and parts[1] == "ops" and parts[2] not in LIBRARY_OP_NAMESPACES:
        return True  # a custom op the kernel registered itself (load_inline, torch.library)
    if len(parts) == 2 and parts[1] in ALLOWED_TORCH_CALLS:
        return True
    return parts[-1] in VIEW_METHODS or parts[-1] in COPY_METHODS or parts[-1].startswith("empty")


def normalized(op: str) -> str:
    """`layer_norm`, `LayerNorm` and `layernorm` name the same op."""
    return op.replace("_", "").lower()


def bound_names(target: ast.AST) -> set[str]:
    """Names an assignment target binds (`a`, `a, b`, `*rest`), not those it only indexes."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(bound_names(e) for e in target.elts)) if target.elts else set()
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return set()



DSL_DECORATOR_ROOTS = ("triton", "numba", "cutlass", "tilelang")


def host_nodes(func: ast.AST, is_device) -> list[ast.AST]:
    """The nodes of func outside the bodies of device functions nested in it (a Triton,
    CuTe or TileLang kernel defined inside a builder): their arithmetic is the kernel's own."""
    found, pending = [], [func]
    while pending:
        node = pending.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_device(child):
                continue
            pending.append(child)
    return found


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def placeholder_tensor(node: ast.Call, name: str) -> bool:
    """`torch.Tensor()` or `torch.tensor([])`: an empty placeholder (an absent bias), an allocation."""
    if name not in ("torch.Tensor", "torch.tensor") or node.keywords and name == "torch.Tensor":
        return False
    if not node.args:
        return name == "torch.Tensor"
    return len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)) and not node.args[0].elts


class FunctionFacts:
    """What one function does with tensors: which names hold tensors, which ops it calls."""

    def __init__(self, func: ast.FunctionDef, imports: Imports, self_tensors: set[str],
                 self_modules: dict[str, str], *, plain_params: frozenset = frozenset(), is_device=None):
        self.func = func
        self.imports = imports
        self.self_tensors = self_tensors
        self.self_modules = self_modules
        self.nodes = host_nodes(func, is_device) if is_device else list(ast.walk(func))
        # An except block's PyTorch is a fallback (check_fallbacks; the run says whether it ran), not forward's work.
        handled = {id(n) for h in self.nodes if isinstance(h, ast.ExceptHandler) for n in ast.walk(h)}
        self.working = [n for n in self.nodes if id(n) not in handled]
        # A helper's parameter every call site fills with a non-tensor (a shape, a dtype name) is no tensor.
        self.tensors = {a.arg for a in func.args.args + func.args.kwonlyargs
                        if a.arg != "self" and a.arg not in plain_params}
        if func.args.vararg:
            self.tensors.add(func.args.vararg.arg)
        for _ in range(3):  # enough passes for assignments that build on each other
            for node in self.nodes:
                if isinstance(node, ast.Assign) and self.is_tensor(node.value):
                    for target in node.targets:
                        self.tensors.update(bound_names(target))
                elif isinstance(node, (ast.For, ast.comprehension)) and self.is_tensor(node.iter):
                    self.tensors.update(bound_names(node.target))

    def self_attr(self, node: ast.AST) -> str | None:
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "self"):
            return node.attr
        return None

    def is_tensor(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Attribute):
            attr = self.self_attr(node)
            if attr is not None:
                return attr in self.self_tensors
            if isinstance(node.value, ast.Attribute) and self.self_attr(node.value) in self.self_modules:
                return node.attr in {"weight", "bias", "running_mean", "running_var"}
            return node.attr in TENSOR_ATTRIBUTES and self.is_tensor(node.value)
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value)
        if isinstance(node, ast.BinOp):
            return self.is_tensor(node.left) or self.is_tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_tensor(node.operand)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body) or self.is_tensor(node.orelse)
        if isinstance(node, (ast.Tuple, ast.List)):
            return any(self.is_tensor(e) for e in node.elts)
        if isinstance(node, ast.Call):
            name = self.imports.resolve(node.func)
            if name and under(name, "torch"):
                if under(name, "torch.cuda", "torch.utils", "torch.backends"):
                    return False
                return name.rsplit(".", 1)[-1] not in NON_TENSOR_TORCH_CALLS
            attr = self.self_attr(node.func)
            if attr is not None:
                return attr in self.self_modules  # self.conv(x) returns a tensor
            if isinstance(node.func, ast.Attribute):
                return node.func.attr not in META_METHODS and self.is_tensor(node.func.value)
        return False

    def compute_uses(self) -> list[tuple[int, str]]:
        """(line, description) of every place the function computes with PyTorch or a library."""
        uses = []
        for node in self.working:
            found = self.compute_use(node)
            if found:
                uses.append((node.lineno, found))
        return uses

    def compute_use(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Call):
            return self.compute_call(node)
        if isinstance(node, ast.BinOp) and (self.is_tensor(node.left) or self.is_tensor(node.right)):
            return f"the operator {op_symbol(node.op)} on tensors"
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not) and self.is_tensor(node.operand):
            return f"the operator {op_symbol(node.op)} on a tensor"
        if isinstance(node, ast.Compare) and not all(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops):
            if self.is_tensor(node.left) or any(self.is_tensor(c) for c in node.comparators):
                return "a comparison of tensors"
        if isinstance(node, ast.AugAssign) and self.is_tensor(node.target):
            return f"the in-place operator {op_symbol(node.op)}= on a tensor"
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and self.is_tensor(target.value):
                    return "indexed assignment into a tensor"
        return None

    def compute_call(self, node: ast.Call) -> str | None:
        name = self.imports.resolve(node.func)
        if name and under(name, "torch"):
            if allowed_torch_call(name) or placeholder_tensor(node, name):
                return None
            return f"{name}()"
        if name and under(name, "cupy"):
            last = name.rsplit(".", 1)[-1]
            if under(name, "cupy.cuda") or last in CUPY_ALLOWED:
                return None
            return f"{name}() (library compute)"
        if name and under(name, "numpy"):
            if name.rsplit(".", 1)[-1] in NUMPY_ALLOWED:
                return None
            return f"{name}() (library compute)"
        attr = self.self_attr(node.func)
        if attr in self.self_modules:
            return f"self.{attr}(), a torch.nn.{self.self_modules[attr]}"
        if isinstance(node.func, ast.Attribute) and self.is_tensor(node.func.value):
            method = node.func.attr
            if method in VIEW_METHODS or method in META_METHODS or method in COPY_METHODS \
                    or method.startswith("new_empty"):
                return None
            if (inner := self.self_attr(node.func.value)) in self.self_modules and method == "forward":
                return f"self.{inner}.forward(), a torch.nn.{self.self_modules[inner]}"
            return f"the tensor method .{method}()"
        return None

    def ops_called(self) -> dict[str, int]:
        """Normalized names of torch ops this function calls, with a line each."""
        ops: dict[str, int] = {}
        for node in self.working:
            op = None
            if isinstance(node, ast.Call):
                name = self.imports.resolve(node.func)
                if name and under(name, "torch"):
                    last = name.rsplit(".", 1)[-1]
                    if not allowed_torch_call(name) and not placeholder_tensor(node, name):
                        op = last
                elif (attr := self.self_attr(node.func)) in self.self_modules:
                    op = self.self_modules[attr]
                elif isinstance(node.func, ast.Attribute) and self.is_tensor(node.func.value):
                    method = node.func.attr
                    if method not in VIEW_METHODS and method not in META_METHODS and method not in COPY_METHODS:
                        op = method
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                op = "matmul"
            if op:
                ops.setdefault(normalized(op.rstrip("_")), node.lineno)
        return ops


def op_symbol(op: ast.AST) -> str:
    symbols = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
               ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.USub: "-", ast.UAdd: "+",
               ast.Invert: "~"}
    return symbols.get(type(op), type(op).__name__)


@dataclass
class ClassInfo:
    node: ast.ClassDef
    methods: dict[str, ast.FunctionDef]
    self_tensors: set[str]
    self_modules: dict[str, str]  # attribute -> nn class name


def class_info(node: ast.ClassDef, imports: Imports) -> ClassInfo:
    methods = {m.name: m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    tensors: set[str] = set()
    modules: dict[str, str] = {}
    for method in methods.values():
        for sub in ast.walk(method):
            if not isinstance(sub, ast.Assign) or not isinstance(sub.value, ast.Call):
                continue
            name = imports.resolve(sub.value.func) or ""
            for target in sub.targets:
                if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id == "self"):
                    continue
                last = name.rsplit(".", 1)[-1]
                if under(name, "torch.nn") and last not in {"Parameter", "Buffer"} and last[:1].isupper():
                    modules[target.attr] = last
                elif under(name, "torch") and not under(name, "torch.cuda", "torch.utils", "torch.backends"):
                    tensors.add(target.attr)
        for sub in ast.walk(method):
            if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr == "register_buffer" and sub.args
                    and isinstance(sub.args[0], ast.Constant) and isinstance(sub.args[0].value, str)):
                tensors.add(sub.args[0].value)
    return ClassInfo(node, methods, tensors, modules)


class Checker:
    def __init__(self, tree: ast.Module, imports: Imports, *, reference: ast.Module | None,
                 allow_library: bool, device: str):
        self.tree = tree
        self.imports = imports
        self.reference = reference
        self.allow_library = allow_library
        self.device = device
        self.reasons: list[str] = []
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.plain_params: dict[int, frozenset] = {}
        self.codes: dict[str, str] = {}
        self.advised: set[str] = set()
        # A module-level `class Model` of the kernel's own (not built on a Model it imports): the name is
        # its own code, judged as any other class of the module, not the reference.
        own = self.classes.get("Model")
        self.reference_name = None if own and "Model" not in imports.names and not any(
            isinstance(n, ast.Name) and n.id == "Model" for b in own.bases for n in ast.walk(b)) else "Model"

    def flag(self, node: ast.AST | int | None, message: str, code: str = findings.RULE) -> None:
        line = node if isinstance(node, int) else getattr(node, "lineno", None)
        reason = f"line {line}: {message}" if line else message
        if reason not in self.reasons:
            self.reasons.append(reason)
            self.codes[reason] = code

    def report(self, code: str):
        """PyTorch doing the work: the run decides (advise) unless a decoy kernel of its own stands
        beside it (code RULE), a cheat refused here."""
        return self.flag if code == findings.RULE else self.advise

    def advise(self, node: ast.AST | int | None, message: str, code: str = findings.RULE) -> None:
        """A finding the run decides (docs/KERNEL_FORMAT.md, "Refusals and advisories"): said, never a verdict."""
        before = len(self.reasons)
        self.flag(node, message, code)
        if len(self.reasons) > before:
            self.advised.add(self.reasons[-1])

    def run(self) -> list[str]:
        self.check_imports()
        self.check_patching()
        self.check_introspection()
        self.check_concurrency_and_streams()
        self.check_embedded_sources()
        if not self.allow_library:  # a PyTorch fallback is a library call there; the run says if it ran
            self.check_fallbacks()
        model_new = self.classes.get("ModelNew")
        if model_new is None:
            self.flag(None, "the module defines no class ModelNew; define `class ModelNew(nn.Module)` "
                            "at module level with the same constructor arguments as Model")
            return self.reasons
        info = class_info(model_new, self.imports)
        self.check_model_new_shape(info)
        reachable = self.forward_reachable(info)
        self.infer_plain_params(reachable)
        partial = not self.allow_library and self.check_partial_replacement(info, reachable)
        # PyTorch doing the work with no kernel of the module's own is KernelBench-legal (library
        # mode), never a trick; beside a kernel that does none of it, the kernel is a decoy.
        own_kernel = self.compiles() and any(self.launches_kernel(f, o) for f, o in reachable)
        uses_code = findings.RULE if own_kernel else findings.NO_KERNEL
        if not partial:
            self.check_reference_use(info, reachable, uses_code)
        self.check_caching(info, reachable)
        self.check_returns_input(info)
        if not self.allow_library:
            if not partial:
                self.check_compute(info, reachable, uses_code)
            self.check_kernel_of_its_own(info, reachable)
        return self.reasons

    def check_partial_replacement(self, info: ClassInfo, reachable) -> bool:
        """A kernel of its own launched in forward, with some ops left to PyTorch (KernelBench allows
        it): one finding naming those ops, coded so the app and the proposer can offer library calls.
        When PyTorch runs every op of the reference, the kernel is a decoy: not partial."""
        if not reachable or not self.compiles() or not any(self.launches_kernel(f, o) for f, o in reachable):
            return False
        uses = sorted((line, use) for f, o in reachable for line, use in self.facts_for(f, o).compute_uses())
        if not uses:
            return False
        theirs = self.reference_ops(labels=True)
        ours = {normalized(op_label(use)) for _, use in uses}
        ours |= {op for f, o in reachable for op in self.facts_for(f, o).ops_called()}
        if theirs and set(theirs) <= ours:
            return False
        # the op recorder sees PyTorch's ops at run time, not a library's (numpy, cupy): those are refused here
        report = self.flag if any(use.endswith("(library compute)") for _, use in uses) else self.advise
        report(uses[0][0], findings.partial_reason([op_label(use) for _, use in uses]), findings.PARTIAL)
        return True

    # --- imports, patching, introspection ----------------------------------------------------

    def check_imports(self) -> None:
        for node in ast.walk(self.tree):
            modules = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    self.flag(node, "relative imports reach outside the kernel; a kernel is one self-contained module")
                    continue
                modules = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            for module in modules:
                reason = self.import_reason(module)
                if reason:
                    self.flag(node, reason)
                    break
                if under(module, "cupy") and self.device == "cpu":
                    self.flag(node, "imports cupy on the cpu target; build C source with the system "
                                    "compiler and load it with ctypes.CDLL instead")

    def import_reason(self, module: str) -> str | None:
        for bad, why in CONCURRENCY_MODULES.items():
            if under(module, bad):
                return (f"imports {module}, which runs work on {why} that the timer can miss; "
                        "do all work inside forward (OpenMP inside a C kernel is fine)")
        for bad, why in INTROSPECTION_MODULES.items():
            if why and under(module, bad):
                return f"imports {module}, which {why}; remove it"
        return None

    def check_patching(self) -> None:
        for node in ast.walk(self.tree):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Delete):
                targets = node.targets
            for target in targets:
                for sub in ast.walk(target):
                    self.check_patch_target(node, sub)
            if isinstance(node, ast.Call):
                self.check_patch_call(node)
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    base_name = self.imports.resolve(base) or ""
                    if base_name in {"torch.Tensor", "torch._C.TensorBase"} or base_name.endswith("TorchDispatchMode"):
                        self.flag(node, f"class {node.name} subclasses {base_name}, which can intercept "
                                        "torch operations and comparisons; return plain tensors")
                    if self.reference_name and (base_name == "Model" or isinstance(base, ast.Name)
                                                and base.id == "Model"):
                        self.flag(node, f"class {node.name} inherits from the reference Model; "
                                        "subclass nn.Module and write your own forward")

    def check_patch_target(self, stmt: ast.AST, target: ast.AST) -> None:
        if isinstance(target, ast.Attribute) and target.attr == "__class__":
            self.flag(stmt, "assigns __class__, which disguises an object's type; return plain tensors")
            return
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return
        if not isinstance(getattr(target, "ctx", None), (ast.Store, ast.Del)):
            return
        if not self.imports.is_imported_root(target):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == "__builtins__":
                self.flag(stmt, "changes __builtins__; leave the interpreter's builtins alone")
            return
        name = self.imports.resolve(target.value if isinstance(target, ast.Subscript) else target) or "?"
        if isinstance(target, ast.Attribute) and isinstance(stmt, ast.Assign) and (
                name in BACKEND_FLAGS or under(name, "torch.backends") and name != "torch.backends"
                and not self.names_code(stmt.value)):
            # a flag of the field's, or a value under torch.backends the source does not show to be code: the run
            # judges the value left and refuses an object left in place of torch's (runner/inside/globalstate.py)
            return
        if isinstance(stmt, ast.Assign) and under(name, *COMPILER_CONFIGS) and literal(stmt.value):
            return
        if under(name, "os.environ"):
            key = _constant_text(target.slice) if isinstance(target, ast.Subscript) and name == "os.environ" else None
            if key not in KERNEL_ENV or isinstance(stmt, ast.Delete):
                self.flag(stmt, ENV_WRITE.format(what=f"[{key!r}]" if key else ""))
        elif under(name, "sys.modules"):
            self.flag(stmt, "replaces entries of sys.modules; import modules normally and do not replace them")
        else:
            self.flag(stmt, f"assigns {name}, monkey-patching a module it imported; "
                            "never change torch, timers, comparisons or the runner, only define your own names")

    def names_code(self, value: ast.AST) -> bool:
        """A value the source shows to be code: a lambda, or a function or class its module defines."""
        return isinstance(value, ast.Lambda) or isinstance(value, ast.Name) and (
            value.id in self.functions or value.id in self.classes)

    def check_patch_call(self, node: ast.Call) -> None:
        name = self.imports.resolve(node.func) or ""
        if isinstance(node.func, ast.Name) and node.func.id in {"setattr", "delattr"} and node.args:
            target = node.args[0]
            if self.imports.is_imported_root(target) or (
                    isinstance(target, ast.Name) and target.id in {"__builtins__", "builtins"}):
                self.flag(node, f"{node.func.id}() on {self.imports.resolve(target)} monkey-patches "
                                "a module it imported; define your own names instead")
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2 \
                and self.imports.is_imported_root(node.args[0]) \
                and not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            self.flag(node, f"getattr() on {self.imports.resolve(node.args[0])} with a computed name hides which "
                            "function it calls; name the function directly")
        if under(name, "os.putenv", "os.unsetenv", "os.environ.update", "os.environ.setdefault",
                 "os.environ.pop", "os.environ.clear"):
            keys = _env_keys(name, node)
            if keys is None or not keys <= KERNEL_ENV:
                shown = f" ({', '.join(sorted(keys - KERNEL_ENV))})" if keys else ""
                self.flag(node, ENV_WRITE.format(what=shown))
        if under(name, "os.fork", "os.forkpty", "os.register_at_fork"):
            self.flag(node, f"calls {name}, which starts work the timer cannot see; do all work inside forward")
        if under(name, "torch") and name.rsplit(".", 1)[-1] in GLOBAL_STATE_SETTERS and name not in BACKEND_FLAG_CALLS:
            self.flag(node, f"calls {name}, which changes global state the runner fixes for the reference "
                            "and baselines; remove it")
        if under(name, "torch.backends") and name.rsplit(".", 1)[-1].startswith(("set_", "enable", "disable")) \
                and name not in SDP_SETTERS:
            self.flag(node, f"calls {name}, which changes global state the runner fixes; remove it")
        if name in {"torch.compile", "torch.compiler.compile", "torch.jit.script", "torch.jit.trace"} \
                or under(name, "torch._dynamo", "torch._inductor"):
            if not self.allow_library:
                self.flag(node, f"calls {name}, which generates code with PyTorch's compiler rather than "
                                "your own kernel; write the kernel yourself")

    def check_introspection(self) -> None:
        aten_parts: set[int] = set()  # ast.walk visits an attribute before the parts of its name
        # hasattr(torch._C, "name") only asks whether a name exists
        aten_parts |= {id(n.args[0]) for n in ast.walk(self.tree) if isinstance(n, ast.Call)
                       and isinstance(n.func, ast.Name) and n.func.id == "hasattr" and len(n.args) == 2
                       and isinstance(n.args[1], ast.Constant)}
        recording_parts: set[int] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute):
                if node.attr in FRAME_ATTRIBUTES:
                    self.flag(node, f"uses .{node.attr}, introspection that can reach the evaluator's data; remove it")
                name = self.imports.resolve(node) or ""
                if under(name, "sys") and name.split(".")[1:2] and name.split(".")[1] in SYS_INTROSPECTION:
                    self.flag(node, f"uses {name}, introspection that can reach the evaluator; remove it")
                if under(name, *RECORDING_STATE) and id(node) not in recording_parts:
                    self.flag(node, f"uses {name}, which can tell the runner's recorded calls from timed ones; "
                                    "remove it")
                    parent = node.value
                    while isinstance(parent, ast.Attribute):  # the parts of this name: said once
                        recording_parts.add(id(parent))
                        parent = parent.value
                if under(name, "ctypes") and name.split(".")[-1] in RAW_MEMORY_CTYPES:
                    self.flag(node, f"uses {name}, raw access to the interpreter's memory; pass tensor "
                                    "data_ptr() values to your own compiled function instead")
                if id(node) in aten_parts:
                    continue
                if under(name, *ATEN_NAMESPACES) and name not in ATEN_NAMESPACES or name in TORCHSCRIPT_SETTINGS:
                    # An aten op (check_compute judges it as a torch.* call) or a TorchScript setting.
                    parent = node.value
                    while isinstance(parent, ast.Attribute):  # torch._C._nn and torch._C: parts of this name
                        aten_parts.add(id(parent))
                        parent = parent.value
                elif internal := undeclared_internal(name):
                    self.advise(node, INTERNAL_LEFT_TO_RUN.format(name=internal))
                    parent = node.value
                    while isinstance(parent, ast.Attribute):  # torch._C: a part of this name
                        aten_parts.add(id(parent))
                        parent = parent.value
                elif under(name, "torch._C"):
                    self.flag(node, f"uses {name}, PyTorch internals; use the public API only")
            elif isinstance(node, ast.Name):
                if node.id == "__builtins__":
                    self.flag(node, "uses __builtins__; leave the interpreter's builtins alone")
                elif node.id in DANGEROUS_BUILTINS and node.id not in self.imports.names \
                        and node.id not in self.functions:
                    self.flag(node, f"uses {node.id}(), which {DANGEROUS_BUILTINS[node.id]}; "
                                    "write the code out plainly")
                elif node.id == self.reference_name and isinstance(node.ctx, ast.Load):
                    self.flag(node, "uses the reference class Model; ModelNew must compute the result itself")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    if (self.imports.resolve(target) or "") in CACHE_DECORATORS:
                        self.flag(decorator, f"memoizes {node.name} with {self.imports.resolve(target)}, "
                                             "which can return results cached from earlier calls; compute every call")

    # --- threads, streams, embedded sources, fallbacks ------------------------------------

    def check_concurrency_and_streams(self) -> None:
        for node, message in sidestreams.findings(self.tree, self.imports.resolve):
            self.flag(node, message)
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            name = self.imports.resolve(node.func) or ""
            if name in EXTERNAL_STREAM_CALLS:
                text = ast.unparse(node)
                if "current_stream" not in text:
                    self.flag(node, f"wraps a stream other than torch's current one ({text}); use "
                                    "cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)")
            elif under(name, "torch.jit.fork", "torch.futures"):
                self.flag(node, f"calls {name}, which runs work asynchronously; do all work inside forward")

    def check_embedded_sources(self) -> None:
        for node in ast.walk(self.tree):
            word = node.attr if isinstance(node, ast.Attribute) else node.value if (
                isinstance(node, ast.Constant) and isinstance(node.value, str)) else None
            if word and L2_POLICY_NAMES.search(word):
                self.flag(node, f"uses {L2_POLICY_NAMES.search(word).group(0)}, which can keep data persisting "
                                "in L2 across the cache flush between timed calls; leave the cache policy alone")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 20:
                for pattern, why in SOURCE_PATTERNS:
                    match = pattern.search(node.value)
                    if match:
                        self.flag(node, f"the embedded source uses {match.group(0).strip()}, which {why}")

    def check_fallbacks(self) -> None:
        for cls in [None, *self.classes.values()]:
            info = class_info(cls, self.imports) if cls else None
            funcs = info.methods.values() if info else self.functions.values()
            for func in funcs:
                facts = FunctionFacts(func, self.imports, info.self_tensors if info else set(),
                                      info.self_modules if info else {})
                for node in ast.walk(func):
                    if isinstance(node, ast.Try):
                        self.check_try(node, facts)
        for node in self.tree.body:
            if isinstance(node, ast.Try):
                self.check_try(node, FunctionFacts(ast.FunctionDef(
                    name="<module>", args=ast.arguments([], [], None, [], [], None, []), body=node.body,
                    decorator_list=[], lineno=node.lineno), self.imports, set(), {}))

    def check_try(self, node: ast.Try, facts: FunctionFacts) -> None:
        for handler in node.handlers:
            for stmt in handler.body:
                for sub in ast.walk(stmt):
                    use = facts.compute_use(sub)
                    name = self.imports.resolve(sub.func) if isinstance(sub, ast.Call) else None
                    if not use and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) \
                            and sub.func.id == self.reference_name:
                        use = "the reference Model"
                    if use or (name and under(name, "torch.nn.functional")):
                        self.advise(handler, f"the except block falls back to PyTorch ({use or name}) when the "
                                             "kernel fails: allowed when the search allows library calls (the run "
                                             "then says when it fell back); otherwise a call that falls back fails "
                                             "the kernel, so let the error propagate", findings.PARTIAL)
                        return

    # --- ModelNew ---------------------------------------------------------------------------

    def check_model_new_shape(self, info: ClassInfo) -> None:
        if "forward" not in info.methods:
            self.flag(info.node, "ModelNew has no forward method; define forward(self, ...) taking "
                                 "the same inputs as Model.forward")
        # The runner calls the module and judges forward; a replaced __call__ or forward decides per call
        # what runs instead, after the judged calls (a held result returned with no work at all).
        if "__call__" in info.methods:
            self.flag(info.methods["__call__"], "ModelNew defines __call__, which replaces the call the runner "
                                                "makes; put the work in forward")
        for node in ast.walk(info.node):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in {"forward", "__call__"} \
                        and isinstance(target.value, ast.Name) and target.value.id == "self":
                    self.flag(node, f"assigns self.{target.attr}, replacing the method the runner calls after "
                                    "the first calls; keep one forward that does the work on every call")

    def forward_reachable(self, info: ClassInfo) -> list[tuple[ast.FunctionDef, ClassInfo | None]]:
        """forward plus the methods and module functions it calls, transitively."""
        if "forward" not in info.methods:
            return []
        seen: dict[int, tuple[ast.FunctionDef, ClassInfo | None]] = {}
        pending: list[tuple[ast.FunctionDef, ClassInfo | None]] = [(info.methods["forward"], info)]
        while pending:
            func, owner = pending.pop()
            if id(func) in seen:
                continue
            seen[id(func)] = (func, owner)
            for node in ast.walk(func):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id == "self" and owner and node.attr in owner.methods \
                        and node.attr != "__init__":
                    pending.append((owner.methods[node.attr], owner))
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    if node.id in self.functions and not self.is_device_function(self.functions[node.id]):
                        pending.append((self.functions[node.id], None))
                    elif node.id in self.classes and node.id != "ModelNew":
                        other = class_info(self.classes[node.id], self.imports)
                        pending.extend((m, other) for m in other.methods.values())
        return list(seen.values())

    def is_device_function(self, func: ast.FunctionDef) -> bool:
        """A kernel body in a DSL (`@triton.jit`, `@cute.kernel`/`@cute.jit`, TileLang's
        `@T.prim_func`, numba): its arithmetic is the kernel's own, not PyTorch's."""
        for decorator in func.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if under(self.imports.resolve(target), *DSL_DECORATOR_ROOTS):
                return True
        return False

    def facts_for(self, func: ast.FunctionDef, owner: ClassInfo | None) -> FunctionFacts:
        return FunctionFacts(func, self.imports, owner.self_tensors if owner else set(),
                             owner.self_modules if owner else {}, is_device=self.is_device_function,
                             plain_params=self.plain_params.get(id(func), frozenset()))

    def infer_plain_params(self, reachable) -> None:
        """Parameters of forward's helpers that every call site fills with a non-tensor. A helper
        also used as a value (passed on, stored) keeps all its parameters tensors."""
        targets = {id(f): f for f, owner in reachable if f.name != "forward"}
        for _ in range(2):  # a helper's call sites inside another helper depend on that one's params
            passed: dict[int, dict[str, bool]] = {}
            escaped: set[int] = set()
            for func, owner in reachable:
                facts = self.facts_for(func, owner)
                called = {id(n.func) for n in facts.nodes if isinstance(n, ast.Call)}
                for node in facts.nodes:
                    target = self.helper_named(node, owner)
                    if target is not None and id(target) in targets and id(node) not in called:
                        escaped.add(id(target))
                    if not isinstance(node, ast.Call) or (target := self.helper_named(node.func, owner)) is None:
                        continue
                    params = [a.arg for a in target.args.args if a.arg != "self"]
                    seen = passed.setdefault(id(target), {})
                    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                        escaped.add(id(target))
                    pairs = list(zip(params, node.args)) + [(k.arg, k.value) for k in node.keywords]
                    for name, value in pairs:
                        seen[name] = seen.get(name, False) or facts.is_tensor(value)
            self.plain_params = {key: frozenset(n for n, tensor in seen.items() if not tensor)
                                 for key, seen in passed.items() if key not in escaped}

    def helper_named(self, node: ast.AST, owner: ClassInfo | None) -> ast.FunctionDef | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                and owner and node.attr in owner.methods:
            return owner.methods[node.attr]
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in self.functions:
            return self.functions[node.id]
        return None

    def reference_ops(self, labels: bool = False) -> dict[str, int]:
        """Normalized names of the torch ops the reference's Model runs (empty when unknown); with
        `labels`, its operators on tensors too (`+`)."""
        if self.reference is None:
            return {}
        ref_imports = collect_imports(self.reference)
        ref_class = next((n for n in self.reference.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
        if ref_class is None:
            return {}
        ref_info = class_info(ref_class, ref_imports)
        ref_ops: dict[str, int] = {}
        for name, method in ref_info.methods.items():
            if name != "__init__":
                facts = FunctionFacts(method, ref_imports, ref_info.self_tensors, ref_info.self_modules)
                ref_ops.update(facts.ops_called())
                if labels:
                    ref_ops.update({normalized(op_label(use)): line for line, use in facts.compute_uses()})
        return ref_ops

    def check_reference_use(self, info: ClassInfo, reachable, code: str) -> None:
        if self.allow_library:
            return
        ref_ops = self.reference_ops()
        for func, owner in reachable:
            for op, line in self.facts_for(func, owner).ops_called().items():
                if op in ref_ops:
                    self.report(code)(line, f"forward calls the reference's own operation ({op}); "
                                            "compute it in your own kernel instead", code)

    def check_compute(self, info: ClassInfo, reachable, code: str) -> None:
        for func, owner in reachable:
            for line, use in self.facts_for(func, owner).compute_uses():
                # PyTorch's compute is recorded on the run's calls; a library's (numpy, cupy) is not: refused here
                report = self.flag if use.endswith("(library compute)") else self.report(code)
                report(line, f"forward computes with {use}; {KERNEL_RULE}. Do this work in your own kernel", code)

    def check_returns_input(self, info: ClassInfo) -> None:
        forward = info.methods.get("forward")
        if forward is None:
            return
        inputs = {a.arg for a in forward.args.args if a.arg != "self"}
        # In source order, so `x = self.kernel(x)` rebinds x to the kernel's result: from then on x
        # is not the input (a linear reading; the runtime alias check covers what branches hide).
        for node in sorted(host_nodes(forward, self.is_device_function), key=_position):
            if isinstance(node, ast.Assign):
                names = set().union(*(bound_names(t) for t in node.targets))
                inputs = inputs | names if self.is_input_view(node.value, inputs) else inputs - names
            elif isinstance(node, ast.Return) and node.value is not None:
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for value in values:
                    if self.is_input_view(value, inputs):
                        self.flag(node, f"forward returns its input ({ast.unparse(value)}) or a view of it; "
                                        "write the result into a fresh output (torch.empty_like) and leave "
                                        "inputs unchanged")

    def is_input_view(self, node: ast.AST, inputs: set[str]) -> bool:
        if isinstance(node, ast.Name):
            return node.id in inputs
        if isinstance(node, ast.Subscript):
            return self.is_input_view(node.value, inputs)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            view_like = VIEW_METHODS - {"to", "float", "half", "bfloat16", "double", "cpu", "cuda", "type_as",
                                        "contiguous"}
            return node.func.attr in view_like and self.is_input_view(node.func.value, inputs)
        return False

    def compiles(self) -> bool:
        if any(isinstance(n, ast.Call) and (self.imports.resolve(n.func) or "") in COMPILE_CALLS
               for n in ast.walk(self.tree)):
            return True
        return any((self.imports.resolve(d.func if isinstance(d, ast.Call) else d) or "") in COMPILE_CALLS
                   for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for d in n.decorator_list)

    def check_kernel_of_its_own(self, info: ClassInfo, reachable) -> None:
        if not self.compiles():
            how = ("a C library built with the system compiler and loaded with ctypes.CDLL, or load_inline"
                   if self.device == "cpu" else "cupy.RawModule/RawKernel, Triton, or load_inline")
            self.advise(None, f"the module compiles no kernel of its own; build one ({how}) and call it in "
                              "forward, or run the search with library calls allowed", findings.NO_KERNEL)
            return
        if reachable and not any(self.launches_kernel(func, owner) for func, owner in reachable):
            self.advise(info.methods["forward"], "forward never calls a compiled kernel; call your kernel there",
                        findings.NO_KERNEL)

    def launches_kernel(self, func: ast.FunctionDef, owner: ClassInfo | None) -> bool:
        facts = self.facts_for(func, owner)
        plain = {"len", "int", "float", "range", "tuple", "list", "min", "max", "isinstance", "print",
                 "super", "type", "getattr", "hasattr", "str", "abs", "divmod", "enumerate", "zip", "sum",
                 "all", "any", "bool", "dict", "set", "round", "id"}
        for node in facts.nodes:
            if not isinstance(node, ast.Call):
                continue
            name = self.imports.resolve(node.func) or ""
            if isinstance(node.func, ast.Name) and (node.func.id in plain or node.func.id in self.functions
                                                     or node.func.id in self.classes):
                continue
            if under(name, "torch", "numpy", "math", "os", "sys", "time", "subprocess", "tempfile"):
                continue
            if under(name, "ctypes") and not under(name, "ctypes.CDLL", "ctypes.cdll"):
                continue
            if under(name, "cupy") and name.rsplit(".", 1)[-1] in CUPY_ALLOWED - {"RawKernel", "RawModule"}:
                continue
            if under(name, "cupy.cuda"):
                continue
            if isinstance(node.func, ast.Attribute):
                if facts.is_tensor(node.func.value):
                    continue
                if facts.self_attr(node.func) in (owner.methods if owner else {}):
                    continue
                if facts.self_attr(node.func) in facts.self_modules:
                    continue
            return True
        return False

    def check_caching(self, info: ClassInfo, reachable) -> None:
        module_names = {t.id for n in self.tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                        if isinstance(t, ast.Name)}
        plain: set[str] = set()  # helpers whose result is no data (a shape key, a name): their calls neither
        for _ in range(2):       # nested helpers: a second pass sees the first's
            states = [(func, CallState(func, self.facts_for(func, owner), module_names, plain))
                      for func, owner in reachable]
            plain = {func.name for func, state in states if func.name != "forward" and not state.returns_data(func)}
        for func, state in states:
            facts = state.facts
            for node in facts.nodes:
                found = state.caching(node)
                if found:
                    self.flag(node, f"{found}; results must be computed from this call's inputs, "
                                    "into a fresh output, on every call")


class CallState:
    """Finds a call's data kept or tested against state that outlives the call. A result held across
    calls is right on a later call only if that call brings the same data back, and the run decides how
    it could know: by identity (id(), data_ptr(), `is`: runner/inside/replay.py's IdentitySwap writes other data
    into the same storages), by position or a flag (stale: LateReplay checks timed calls against other
    sets' truths, and its random untimed calls shift any count), or by content. Only the last is right
    on every run, so what stays refused is what a content cache needs: a lookup keyed by the data, a
    comparison of the data with held state, and keeping the call's outputs or its input tensors
    themselves. Values made from the data (a name picked by timing, a traced module, an RNN's state, a
    CUDA graph's static input cloned or copy_'d each call) are the run's to judge."""

    SHAPE_ATTRIBUTES = {"shape", "dtype", "device", "ndim", "is_cuda", "layout"}
    SHAPE_METHODS = {"size", "dim", "numel", "stride", "is_contiguous", "element_size", "ndimension",
                     "nelement", "get_device", "is_floating_point", "data_ptr", "untyped_storage", "storage"}
    ALLOCATIONS = {"empty_like", "zeros_like", "ones_like", "empty", "zeros", "ones", "empty_strided", "new_empty",
                   "new_zeros", "new_ones", "new_empty_strided"}  # not full*: its fill value may be data
    LOOKUPS = {"get", "setdefault", "pop", "__getitem__", "__contains__", "index", "count"}
    STORES = {"append", "update", "__setitem__", "add", "insert", "extend", "appendleft"}
    COMPARISONS = {"equal", "allclose", "isclose", "eq", "ne"}

    def __init__(self, func: ast.FunctionDef, facts: FunctionFacts, module_names: set[str], plain: set[str]):
        self.facts = facts
        self.module_names = module_names
        self.plain = plain  # the kernel's helpers that return no data
        self.params = {a.arg for a in func.args.args if a.arg != "self" and a.arg in facts.tensors}
        self.declared_global = {name for n in ast.walk(func) if isinstance(n, (ast.Global, ast.Nonlocal))
                                for name in n.names}
        # an input copied into a buffer (x.clone(), buf.copy_(x)): a CUDA graph's static input, never an output
        copies = {n.func.value.id for n in facts.nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr == "copy_" and isinstance(n.func.value, ast.Name)
                  and any(isinstance(a, ast.Name) and a.id in self.params for a in n.args)}
        copies |= {t.id for n in facts.nodes if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                   and isinstance(n.value.func, ast.Attribute) and n.value.func.attr == "clone"
                   and isinstance(n.value.func.value, ast.Name) and n.value.func.value.id in self.params
                   for t in n.targets if isinstance(t, ast.Name)}
        self.returned = {n.id for r in ast.walk(func) if isinstance(r, ast.Return) and r.value
                         for n in ast.walk(r.value) if isinstance(n, ast.Name)} - copies
        self.derived: dict[str, str] = {}  # locals computed from the data (a key made of it is the data): origin
        for _ in range(2):
            for n in facts.nodes:
                if isinstance(n, ast.Assign) and (origin := self.call_data(n.value)):
                    root = origin.rsplit(", made from ", 1)[-1]
                    self.derived.update({name: f"{name}, made from {root}"
                                         for t in n.targets for name in bound_names(t)})

    def returns_data(self, func: ast.FunctionDef) -> bool:
        return any(self.call_data(r.value) for r in ast.walk(func) if isinstance(r, ast.Return) and r.value)

    def caching(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Compare) and not all(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops):
            return self.tested([node.left, *node.comparators])
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            kept = self.kept(node.value)
            for target in targets:
                holder = self.holder(target, rebinding=True)
                if holder and kept:
                    return f"it stores {kept} in {holder}, which survives across calls"
                if holder and isinstance(target, ast.Subscript) and self.call_data(target.slice):
                    return f"it fills {holder} keyed by {self.call_data(target.slice)}"
        if isinstance(node, ast.Call):
            return self.call_caching(node)
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            holder = self.holder(node.value)
            data = self.call_data(node.slice)
            if holder and data:
                return f"it looks up {holder} by {data}"
        return None

    def call_caching(self, node: ast.Call) -> str | None:
        name = self.facts.imports.resolve(node.func) or ""
        method = name.rsplit(".", 1)[-1] if name else getattr(node.func, "attr", getattr(node.func, "id", ""))
        if method in self.COMPARISONS:  # torch.equal(x, self.prev), x.equal(self.prev)
            method_call = isinstance(node.func, ast.Attribute) and not self.facts.imports.is_imported_root(node.func)
            receiver = [node.func.value] if method_call else []
            return self.tested([*receiver, *node.args])
        if not isinstance(node.func, ast.Attribute) or not (holder := self.holder(node.func.value)):
            return None
        if method in self.LOOKUPS and (data := next((d for a in node.args if (d := self.call_data(a))), None)):
            return f"it looks up {data} in {holder}, which survives across calls"
        if method in self.STORES and (kept := next((k for a in node.args if (k := self.kept(a))), None)):
            return f"it keeps {kept} in {holder}, which survives across calls"
        return None

    def tested(self, parts: list[ast.AST]) -> str | None:
        holders = [h for part in parts if (h := self.holder_in(part))]
        data = [d for part in parts if (d := self.call_data(part))]
        if holders and data:
            return f"it compares {data[0]} with {holders[0]}, which survives across calls"
        return None

    def kept(self, node: ast.AST) -> str | None:
        """The call's inputs themselves (or views of them) or its outputs (or copies) in node: what a
        cache holds. A clone of an input is a buffer (a CUDA graph's static input), not the input."""
        if isinstance(node, (ast.Tuple, ast.List)):
            return next((k for e in node.elts if (k := self.kept(e))), None)
        if self.allocation(node):
            return None
        if isinstance(node, ast.Subscript) or isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in VIEW_METHODS | {"clone", "detach"}:
            inner = node.value if isinstance(node, ast.Subscript) else node.func.value
            found = self.kept(inner)
            clone = isinstance(node, ast.Call) and node.func.attr == "clone"
            if found and not (found.startswith("the input") and clone):
                return found
            return None
        if isinstance(node, ast.Name):
            if node.id in self.params:
                return f"the input {node.id}"
            if node.id in self.returned and self.facts.is_tensor(node):
                return f"the output {node.id}"
        return None

    def allocation(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.facts.imports.resolve(node.func) or ""
        return (under(name, "torch") or isinstance(node.func, ast.Attribute)) \
            and name.rsplit(".", 1)[-1] in self.ALLOCATIONS

    def holder(self, target: ast.AST, *, rebinding: bool = False) -> str | None:
        """The cross-call state target belongs to: self.x or a module global. A plain name that an
        assignment rebinds (`rebinding`) is a local, not the global of the same name."""
        node = target
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                return f"self.{node.attr}"
            node = node.value
        if isinstance(node, ast.Name):
            if node.id in self.declared_global:
                return f"the global {node.id}"
            if node.id in self.module_names and not (rebinding and node is target):
                return f"the module-level {node.id}"
        return None

    def holder_in(self, node: ast.AST) -> str | None:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Attribute, ast.Subscript, ast.Name)):
                holder = self.holder(sub)
                if holder:
                    return holder
        return None

    def call_data(self, node: ast.AST) -> str | None:
        """Describes the call's inputs or outputs inside node; shapes, dtypes and empty buffers do not count."""
        if isinstance(node, ast.Attribute) and node.attr in self.SHAPE_ATTRIBUTES:
            return None
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in self.SHAPE_METHODS:
                return None
            if isinstance(node.func, ast.Name) and node.func.id in {"id", "len"} or self.allocation(node):
                return None
            helper = node.func.id if isinstance(node.func, ast.Name) else self.facts.self_attr(node.func)
            if helper in self.plain:
                return None
        if isinstance(node, ast.Name):
            if node.id in self.params:
                return f"the input {node.id}"
            if node.id in self.derived:
                return self.derived[node.id]
            if node.id in self.returned and self.facts.is_tensor(node):
                return f"the output {node.id}"
            return None
        for child in ast.iter_child_nodes(node):
            found = self.call_data(child)
            if found:
                return found
        return None


def op_label(use: str) -> str:
    """The op a compute_use description names: `torch.nn.functional.relu()` -> relu,
    `self.fc1(), a torch.nn.Linear` -> linear, `the operator + on tensors` -> +."""
    if match := re.match(r"self\.\w+(?:\.forward)?\(\), a torch\.nn\.(\w+)", use):
        return match.group(1).lower()
    if match := re.match(r"the (?:in-place )?operator (\S+)", use):
        return match.group(1)
    if match := re.match(r"the tensor method \.(\w+)\(\)", use):
        return match.group(1)
    if match := re.match(r"([\w.]+)\(\)", use):
        name = match.group(1)
        return name.rsplit(".", 1)[-1] if under(name, "torch") else name
    return use.replace(" into a tensor", "").replace(" of tensors", "")


def check_source(source: str, *, reference_source: str = "", allow_library: bool = False,
                 device: str = "cpu") -> list[str]:
    """Reasons to reject a candidate kernel before running it; an empty list means none found."""
    return [f.reason for f in check_findings(source, reference_source=reference_source,
                                             allow_library=allow_library, device=device)]


def check_findings(source: str, *, reference_source: str = "", allow_library: bool = False,
                   device: str = "cpu") -> list[Finding]:
    """check_source's reasons with their reason codes (runner/common/findings.py), the first to report first."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return [Finding(f"line {error.lineno}: the kernel is not valid Python ({error.msg}); fix the syntax")]
    if problem := toolchain_problem(source):
        return [Finding(problem, findings.TOOLCHAIN, "compile_error")]
    reference = None
    if reference_source:
        try:
            reference = ast.parse(reference_source)
        except SyntaxError:
            reference = None
    tree = ast.fix_missing_locations(_Plain().visit(tree))
    checker = Checker(tree, collect_imports(tree), reference=reference, allow_library=allow_library,
                      device=device)
    reasons = checker.run()
    if not allow_library:  # PyTorch called however it is reached: the op recorder sees it run
        held = [r for r in torch_functions_held(tree, checker.imports) if r not in reasons]
        reasons += held
        checker.advised.update(r for r in held if "__dict__" not in r)
    found = [Finding(r, checker.codes.get(r, findings.RULE), findings.ADVISORY if r in checker.advised else "rejected")
             for r in reasons]
    # Refusals first (the verdict is the first's), a cheat before the partial-replacement hint; then advisories.
    return sorted(found, key=lambda f: (f.advisory, f.code in (findings.PARTIAL, findings.NO_KERNEL)))


class _Plain(ast.NodeTransformer):
    """Spell indirect lookups with a literal name the way they act, so every later check
    sees them: getattr(torch, "softmax") is torch.softmax, np.__dict__["exp"] is np.exp."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) == 2 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
                and node.args[1].value.isidentifier():
            return ast.copy_location(ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Load()),
                                     node)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__" \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str) \
                and node.slice.value.isidentifier() and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Attribute(value=node.value.value, attr=node.slice.value, ctx=ast.Load()),
                                     node)
        return node


# Names under torch that are values, not computations.
TORCH_VALUES = {"float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8", "uint8", "int16",
                "int32", "int64", "long", "int", "bool", "complex64", "complex128", "float8_e4m3fn",
                "float8_e5m2", "dtype", "device", "Size", "Tensor", "nn", "cuda", "utils", "backends", "version",
                "Generator", "strided", "channels_last", "contiguous_format", "preserve_format", "no_grad",
                "inference_mode", "finfo", "iinfo"}
TORCH_COMPUTE_NAMESPACES = ("torch.nn.functional", "torch.special", "torch.linalg", "torch.fft", "torch.ops",
                            "torch.Tensor", "torch.sparse", "torch.nested")


def torch_functions_held(tree: ast.Module, imports: Imports) -> list[str]:
    """A PyTorch function taken as a value (kept in a dict, a list, a default argument, an
    attribute) is called later where the checks cannot follow it: a fallback hidden in a
    helper. Also a module's namespace (module.__dict__) read as a dict."""
    reasons = []
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    called |= {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}  # inner links of a.b.c
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "__dict__" and imports.is_imported_root(node.value):
            reasons.append(f"line {node.lineno}: reads {imports.resolve(node.value)}.__dict__, which hides which "
                           "function it calls; name the function directly")
        if not isinstance(node, ast.Attribute) or id(node) in called or not isinstance(node.ctx, ast.Load):
            continue
        name = imports.resolve(node) or ""
        if not under(name, "torch") or allowed_torch_call(name):
            continue
        parts = name.split(".")
        computing = any(under(name, ns) and name != ns for ns in TORCH_COMPUTE_NAMESPACES) or (
            len(parts) == 2 and parts[1] not in TORCH_VALUES and parts[1][:1].islower())
        if computing:
            reasons.append(f"line {node.lineno}: keeps {name} as a value to call later, where the checks cannot "
                           "follow it (a PyTorch fallback); " + KERNEL_RULE + ", or allow library calls")
    return reasons
