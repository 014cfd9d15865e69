"""Driver-level launch accounting: every GPU kernel a call of forward launches, on any stream and
from any launcher (cupy, load_inline, Triton, CUTLASS/CuTe, cuBLAS/cuDNN through ctypes), read from
CUPTI's activity records through torch.profiler's CUDA activity.

The Python-level launch counter (LaunchCounter, below) sees only the launchers it wraps; this sees
the kernels themselves. From them it decides, on the untimed calls only (profiling adds overhead):
- a kernel of its own (without library calls): every kernel launched is the candidate's own,
  matched by name against the kernels its source defines (`__global__` functions, `@triton.jit` /
  `@cute.kernel` functions), except the fill and copy kernels of the bookkeeping ops forward may
  use (docs/KERNEL_FORMAT.md lists them);
- side streams (always): a kernel on a stream other than the timed stream is refused, naming the
  stream and the kernel, unless forward waited for it: it ended before a marker launched on the timed
  stream right after forward returned began (the stream waited for it, or the host synchronized), as the
  timer's end event, recorded at that same point, would have.
It runs inside the candidate's process, as the Python-level counter does: the own kernels it saw stand
in for that counter's count where no wrapped launcher ran them (a CUDA graph's replay), and nothing
here bears on `correct`, which only the trusted judge decides.
On the CPU it does nothing: the Python-level counter stays the rule there. Torch is imported
lazily, only on CUDA.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys

from . import findings

# The kernels of PyTorch's bookkeeping ops (zeros/fill_, contiguous/to/copy_, clone): allowed in forward.
BOOKKEEPING_KERNELS = re.compile(
    r"at::native::.*(?:FillFunctor|fill_kernel|direct_copy_kernel|copy_kernel|CopyFunctor|"
    r"copy_device_to_device|cat_array_batched_copy|CatArrayBatchedCopy)", re.IGNORECASE)
# Memory activity CUPTI reports beside kernels; not kernels of anyone's.
MEMORY_ACTIVITY = re.compile(r"^(?:Memcpy|Memset)\b")

# Between __global__ and the name: the return type and qualifiers, parenthesised ones among them
# (__launch_bounds__(256), __cluster_dims__(2, 1, 1), __maxnreg__(64), __attribute__((...))).
_QUALIFIER = r"__\w+__\s*\((?:[^()]|\([^()]*\))*\)"
_CUDA_KERNEL = re.compile(rf"__global__\s+((?:{_QUALIFIER}|[^(;{{])*?)\b(?!__\w+__)(\w+)\s*\(")
_NAME_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(\w+)[ \t]*$", re.MULTILINE)
_PYTHON_KERNEL = re.compile(
    r"@(?:triton\.jit|triton\.autotune|cute\.kernel|cute\.jit|jit)\b[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)")


def own_kernel_names(source: str) -> set[str]:
    """Names of the kernels a candidate's source defines (in Python or in embedded CUDA strings)."""
    names = {m.group(2) for m in _CUDA_KERNEL.finditer(source)}
    # A kernel named through a macro (`#define GEMM_NAME mm_tiled` ... `__global__ void GEMM_NAME(`)
    # launches under the macro's value: follow such one-word macros.
    macros = dict(_NAME_MACRO.findall(source))
    for name in list(names):
        seen = {name}
        while name in macros and macros[name] not in seen:
            name = macros[name]
            seen.add(name)
            names.add(name)
    names.update(m.group(1) for m in _PYTHON_KERNEL.finditer(source))
    return {name for name in names if not re.fullmatch(r"__\w+__", name)} - {"if", "for", "while", "return", "void"}


def base_name(kernel: str) -> str:
    """The identifier of a launched kernel's name: `void ns::foo<128>(float*, int)` -> foo,
    `_Z3fooPfi` -> foo, `_ZN2ns3fooEPf` -> foo, `foo` -> foo."""
    if kernel.startswith("_Z"):
        rest = kernel[3:] if kernel.startswith("_ZN") else kernel[2:]
        parts = []
        while (match := re.match(r"(\d+)", rest)) is not None:
            size = int(match.group(1))
            start = len(match.group(1))
            parts.append(rest[start:start + size])
            rest = rest[start + size:]
            if not kernel.startswith("_ZN"):
                break
        return parts[-1] if parts else kernel
    name = re.sub(r"^(?:void|[\w:]+\s+)\s*", "", kernel.strip()) if " " in kernel.split("(")[0] else kernel
    name = name.split("(")[0]
    depth, plain = 0, ""
    for ch in name:  # drop template arguments, nested ones included
        depth += ch == "<"
        if depth == 0:
            plain += ch
        depth -= ch == ">"
    return plain.rsplit("::", 1)[-1].strip()


def is_own(kernel: str, own: set[str]) -> bool:
    """Launched under a name the source defines; CuTe DSL adds a prefix and numbered suffixes."""
    base = base_name(kernel)
    return base in own or any(re.fullmatch(rf"(?:kernel_cutlass_|cutlass_)?{re.escape(o)}(?:_\d+)*", base)
                              for o in own)


def is_bookkeeping(kernel: str) -> bool:
    return bool(BOOKKEEPING_KERNELS.search(kernel))


def decide(kernels: list[tuple], own: set[str], timed_stream: int | None, *, allow_library: bool,
           call: int, returned_ns: int | None = None) -> findings.Finding | None:
    """The finding for one call's launches [(kernel name, stream[, start ns, end ns])], None when they are
    within the rules; `returned_ns`: when the timed stream's marker after forward returned began."""
    for kernel in kernels:
        name, stream = kernel[:2]
        waited = returned_ns is not None and len(kernel) == 4 and kernel[3] <= returned_ns
        if timed_stream is not None and stream != timed_stream and not waited:
            return findings.Finding(
                f"forward (untimed call {call}) launched {base_name(name)} on stream {stream}, not on the timed "
                f"stream {timed_stream}, and returned before it finished: work nothing waits for is not timed; "
                "launch on torch's current stream, or make it wait (torch.cuda.current_stream().wait_stream(side)) "
                "before forward returns", findings.RULE)
    if allow_library:
        return None
    kernels = [(n, s) for n, s, *_ in kernels if not MEMORY_ACTIVITY.match(n)]
    mine = [n for n, _ in kernels if is_own(n, own)]
    foreign = list(dict.fromkeys(base_name(n) for n, _ in kernels if not is_own(n, own) and not is_bookkeeping(n)))
    if foreign and mine:
        shown = ", ".join(foreign[:3])
        return findings.Finding(
            f"forward (untimed call {call}) launched kernels that are not its own ({shown}) beside its own "
            f"({', '.join(dict.fromkeys(base_name(n) for n in mine))}): a library or PyTorch did part of the work; "
            "allowed when the search allows library calls, otherwise do it in your own kernel too", findings.PARTIAL)
    if foreign:
        return findings.Finding(
            f"forward (untimed call {call}) launched only kernels that are not its own ({', '.join(foreign[:3])}): "
            "a library or PyTorch did the work; a kernel of its own must (or allow library calls)", findings.NO_KERNEL)
    if not mine:
        return findings.Finding(
            f"forward (untimed call {call}) launched no GPU kernel of its own (its source defines "
            f"{', '.join(sorted(own)[:4]) or 'none'}); library calls are not allowed in this search", findings.NO_KERNEL)
    return None


def prepare(device: str) -> None:
    """One empty profiler cycle before the device is asked for: the first cycle in a process takes
    seconds (CUPTI starts, and torch.profiler imports torch._dynamo), which would otherwise be spent
    inside the first recorded call, holding the device while it idles. Runner code only, before any
    of the candidate's; a profiler that cannot start is left for `recording` to report."""
    if device != "cuda":
        return
    from torch.profiler import ProfilerActivity, profile

    try:
        with profile(activities=[ProfilerActivity.CUDA]):
            pass
    except Exception:  # noqa: BLE001 - Launches.recording says why, on the first call
        pass


class Launches:
    """Records the kernels of one call at a time on CUDA; inert elsewhere. A profiler that cannot start
    (no CUPTI in this environment) leaves the verdict to the other checks and says so in `error`."""

    def __init__(self, source: str, device: str):
        self.enabled = device == "cuda"
        self.own = own_kernel_names(source)
        self.kernels: list[tuple[str, int, int, int]] = []
        self.timed_stream: int | None = None
        self.returned_ns: int | None = None
        self.error = ""
        self.recorded = 0
        if self.enabled:  # read before any candidate code: an event's device, compared, not printed (3x faster)
            import torch

            self._cuda = torch.autograd.DeviceType.CUDA

    @contextlib.contextmanager
    def recording(self):
        self.kernels, self.timed_stream, self.returned_ns = [], None, None
        if not self.enabled or self.error:
            yield
            return
        import torch
        from torch.profiler import ProfilerActivity, profile

        try:
            profiler = profile(activities=[ProfilerActivity.CUDA])
            profiler.__enter__()
        except Exception as exc:  # noqa: BLE001 - any failure to start leaves the other checks in charge
            self.error = f"{type(exc).__name__}: {exc}"[:300]
            yield
            return
        try:
            torch.zeros(1, device="cuda")  # a marker: its fill kernel runs on the timed stream, first
            yield
            torch.zeros(1, device="cuda")  # and last: where the timer's end event would be recorded
            self.returned_ns = 0  # the marker is there to find
        finally:
            torch.cuda.synchronize()
            profiler.__exit__(None, None, None)
            self._read(profiler)

    def _read(self, profiler) -> None:
        try:
            events = profiler.profiler.kineto_results.events()
        except Exception as exc:  # noqa: BLE001
            self.error = f"no activity records: {exc}"[:300]
            return
        gpu = sorted((e for e in events if e.device_type() == self._cuda), key=lambda e: e.start_ns())
        launched = [(e.name(), int(e.device_resource_id()), int(e.start_ns()), int(e.end_ns())) for e in gpu]
        if not launched:
            self.error = "the profiler recorded no GPU activity, not even its marker"
            return
        self.timed_stream = launched[0][1]
        last = max(i for i, k in enumerate(launched) if k[1] == self.timed_stream)
        # the marker after forward returned: a call that raised has none, and every kernel is judged
        if self.returned_ns is not None and last and (is_bookkeeping(launched[last][0])
                                                     or MEMORY_ACTIVITY.match(launched[last][0])):
            self.returned_ns = launched[last][2]
            launched = launched[:last] + launched[last + 1:]
        else:
            self.returned_ns = None
        self.kernels = launched[1:]
        self.recorded += 1

    def own_launched(self) -> int:
        """How many of the last recorded call's kernels were the candidate's own (0 where none was recorded)."""
        if not self.enabled or self.timed_stream is None:
            return 0
        return sum(1 for name, *_ in self.kernels if is_own(name, self.own))

    def finding(self, *, allow_library: bool, call: int) -> findings.Finding | None:
        if not self.enabled or self.timed_stream is None:
            return None
        return decide(self.kernels, self.own, self.timed_stream, allow_library=allow_library, call=call,
                      returned_ns=self.returned_ns)


class LaunchCounter:
    """Counts calls into code the candidate compiled: cupy raw kernels, ctypes functions of
    libraries under the sandbox's own directories, functions of extensions built there.
    Installed before the candidate is imported."""

    def __init__(self, own_dirs: list[str]):
        self.own_dirs = [os.path.realpath(d) for d in own_dirs if d]
        self.calls = 0
        self.active = False
        self.libraries: list[str] = []
        self.launches = Launches("", "cpu")  # inert until watch()
        self.built: dict = {}  # name -> cupy kernel launched, for its attributes (runner/inside/kernelattrs.py)

    def watch(self, source: str, device: str) -> None:
        """Driver-level accounting of the kernels each untimed call launches (Launches, above; CUDA only)."""
        self.launches = Launches(source, device)

    def owns(self, path: str | None) -> bool:
        if not path or not isinstance(path, str) or "site-packages" in path or path.startswith("/usr/"):
            return False
        real = os.path.realpath(path)
        return any(real.startswith(d + os.sep) for d in self.own_dirs)

    def count(self):
        if self.active:
            self.calls += 1

    def install(self) -> None:
        self._install_ctypes()
        if "cupy" in sys.modules:
            self._install_cupy(sys.modules["cupy"])

    def _install_ctypes(self) -> None:
        counter = self
        original_init = ctypes.CDLL.__init__

        def init(dll, name, *args, **kwargs):
            original_init(dll, name, *args, **kwargs)
            if counter.owns(name if isinstance(name, str) else None):
                counter.libraries.append(str(name))
                base = dll._FuncPtr

                class CountedFuncPtr(base):
                    _flags_ = base._flags_
                    _restype_ = base._restype_

                    def __call__(self, *call_args):
                        counter.count()
                        return base.__call__(self, *call_args)

                dll._FuncPtr = CountedFuncPtr

        ctypes.CDLL.__init__ = init

    def _install_cupy(self, cupy) -> None:
        counter = self
        raw_kernel, raw_module = cupy.RawKernel, cupy.RawModule

        class CountedRawKernel(raw_kernel):
            def __call__(self, *args, **kwargs):
                counter.count()
                counter.built.setdefault(self.name, self)
                return raw_kernel.__call__(self, *args, **kwargs)

        class CountedFunction:
            """Counts launches; attribute reads and writes (e.g. max_dynamic_shared_size_bytes
            for opt-in shared memory) go to the real kernel."""

            def __init__(self, function):
                object.__setattr__(self, "_function", function)

            def __call__(self, *args, **kwargs):
                counter.count()
                return self._function(*args, **kwargs)

            def __getattr__(self, name):
                return getattr(self._function, name)

            def __setattr__(self, name, value):
                setattr(self._function, name, value)

        class CountedRawModule(raw_module):
            def get_function(self, name):
                function = raw_module.get_function(self, name)
                counter.built.setdefault(name, function)
                return CountedFunction(function)

        cupy.RawKernel, cupy.RawModule = CountedRawKernel, CountedRawModule

    def install_extension_hook(self) -> None:
        """load/load_inline import the built extension without sys.modules; wrap its
        functions as it comes back. Only when the kernel uses cpp_extension (importing it
        costs time)."""
        import torch.utils.cpp_extension as extension

        original = extension._import_module_from_library
        counter = self

        def load(*args, **kwargs):
            module = original(*args, **kwargs)
            counter.wrap_module(module)
            return module

        extension._import_module_from_library = load

    def wrap_extensions(self) -> None:
        """Count calls into extension modules built under our directories and imported
        the usual way."""
        for module in list(sys.modules.values()):
            if self.owns(getattr(module, "__file__", None)):
                self.wrap_module(module)
        if "triton" in sys.modules:
            self.wrap_triton()

    def wrap_triton(self) -> None:
        """Count launches of Triton kernels defined in the candidate's own files: `kernel[grid](...)`
        and autotuned kernels both end in JITFunction.run."""
        try:
            from triton.runtime.jit import JITFunction
        except ImportError:
            return
        if getattr(JITFunction.run, "_kernellab_counted", False):
            return
        original, counter = JITFunction.run, self

        def run(kernel, *args, **kwargs):
            code = getattr(getattr(kernel, "fn", None), "__code__", None)
            if counter.owns(getattr(code, "co_filename", None)):
                counter.count()
            return original(kernel, *args, **kwargs)

        run._kernellab_counted = True
        JITFunction.run = run

    def wrap_module(self, module) -> None:
        if getattr(module, "_kernellab_counted", False):
            return
        for attr in dir(module):
            fn = getattr(module, attr)
            if callable(fn) and type(fn).__name__ == "builtin_function_or_method":
                setattr(module, attr, self._counted(fn))
        try:
            module._kernellab_counted = True
        except AttributeError:
            pass

    def _counted(self, fn):
        counter = self

        def call(*args, **kwargs):
            counter.count()
            return fn(*args, **kwargs)

        call.__name__ = getattr(fn, "__name__", "extension_function")
        return call
