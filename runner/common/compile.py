"""Compile paths: what the sandbox sets up for them, how their failures are recognised,
and compiler messages trimmed for a person or an LLM.

The kernel module compiles itself (so an exported kernel runs on its own): NVRTC through
cupy for CUDA, the system C compiler + ctypes for the CPU, or load_inline on either. The
runner gives each sandbox its own caches and, on CUDA hosts, the toolkit's include folder
so NVRTC finds headers such as <mma.h>.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import traceback

from .procs import threads

MAX_LOG_CHARS = 4000
MAX_LOG_LINES = 60


def cuda_home() -> str | None:
    """The CUDA toolkit folder (for NVRTC include paths), from the environment or nvcc."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var) and os.path.isdir(os.environ[var]):
            return os.environ[var]
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return "/usr/local/cuda" if os.path.isdir("/usr/local/cuda") else None


CACHE_VARS = ("TMPDIR", "TORCH_EXTENSIONS_DIR", "CUPY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR",
              "XDG_CACHE_HOME", "HOME")


def toolchain_homes(device: str) -> list[str]:
    """Folders of the compilers a kernel may use (the C compiler named by CC/CXX or found on
    PATH, nvcc's toolkit on CUDA hosts), for a sandbox that sees only what it is given; e.g.
    CC=/opt/gcc/bin/gcc gives /opt/gcc. Triton and torch.compile need the C compiler too."""
    homes = []
    for tool in (os.environ.get("CC"), os.environ.get("CXX"), "cc", "c++", "gcc", "g++"):
        found = shutil.which(tool) if tool else None
        if found:
            homes.append(os.path.dirname(os.path.dirname(os.path.realpath(found))))
    if device == "cuda" and cuda_home():
        homes.append(cuda_home())
    return [h for h in dict.fromkeys(homes) if h not in ("/", "")]


def cache_env(root: str, create: bool = True) -> dict:
    """Per-sandbox compile caches, so no candidate sees another's build products. Inside
    bubblewrap they lie in the sandbox's own /tmp, made by the child (make_cache_dirs)."""
    caches = os.path.join(root, "caches")  # not on sys.path: a folder named like a package would shadow it
    dirs = {
        "TMPDIR": os.path.join(root, "tmp"),
        "TORCH_EXTENSIONS_DIR": os.path.join(caches, "torch_extensions"),
        "CUPY_CACHE_DIR": os.path.join(caches, "cupy_cache"),
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(caches, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(caches, "triton_cache"),
        "XDG_CACHE_HOME": os.path.join(caches, "xdg"),
        "HOME": os.path.join(root, "home"),
    }
    if create:
        for path in dirs.values():
            os.makedirs(path, exist_ok=True)
    return dirs


def make_cache_dirs() -> None:
    for name in CACHE_VARS:
        if os.environ.get(name):
            os.makedirs(os.environ[name], exist_ok=True)


# --- build priority ------------------------------------------------------------------------
# A sandbox starts at SCHED_IDLE and nice 19 (launch.py), its rlimit for nice at 0 so nothing in it
# can leave them: its warm-up, imports and compiles (nvcc, g++, ninja: its children inherit the
# policy) take only CPU that nobody else wants, and never slow the one sandbox being timed. At its
# device grant the parent puts every thread of it back to normal priority for the GPU phases.

def idle_builds() -> bool:
    """KERNELLAB_BUILD_PRIORITY=idle (the default) or normal; idle only where this process may
    raise the sandbox again (CAP_SYS_NICE), else its timed phase would stay idle too."""
    return os.environ.get("KERNELLAB_BUILD_PRIORITY", "idle") != "normal" and _may_renice()


CAP_SYS_NICE = 23


def _may_renice() -> bool:
    try:
        for line in open("/proc/self/status"):
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_NICE & 1)
    except (OSError, ValueError):
        pass
    return False


def promote(cgroups) -> int:
    """Every thread of the sandbox's processes to SCHED_OTHER, nice 0 (the parent is root); how many."""
    if cgroups is None or not idle_builds():
        return 0
    done = 0
    for _, tid in threads(cgroups.processes() or []):
        try:
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            os.setpriority(os.PRIO_PROCESS, tid, 0)
            done += 1
        except OSError:
            pass  # gone meanwhile
    return done


# Kernel DSLs by module, with the package that provides them (a missing one is a compile_error).
DSL_PACKAGES = {"cutlass": "nvidia-cutlass-dsl (CuTe DSL)", "tilelang": "tilelang", "triton": "triton",
                "thunderkittens": "ThunderKittens", "numba": "numba"}
HIP_MARKERS = re.compile(r"hip/hip_runtime\.h|\bhipcc\b|\bhipLaunchKernelGGL\b|\bhipMalloc\b|__HIP_PLATFORM")


def toolchain_problem(source: str) -> str | None:
    """Why a kernel cannot be built for an NVIDIA GPU at all, before anything runs: HIP needs ROCm."""
    if HIP_MARKERS.search(source):
        return ("the kernel is written for AMD's HIP (ROCm: hipcc, hip/hip_runtime.h), which this runner does "
                "not target: it runs CUDA on NVIDIA GPUs; write the kernel in CUDA (load_inline or cupy) instead")
    return None


def missing_package(exc: BaseException) -> str | None:
    """The message for a kernel importing a module that is not installed, naming its package."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    package = DSL_PACKAGES.get(top, top)
    return (f"the kernel imports {exc.name}, from the package {package}, which is not installed where the "
            "evaluator runs; install it there or write the kernel with CUDA (load_inline, cupy) or Triton")


def is_lazy_compile_error(exc: BaseException) -> bool:
    """A kernel compiled on its first launch (Triton JIT) failing there: a compile error all the same."""
    module = type(exc).__module__ or ""
    return module.startswith("triton") and type(exc).__name__ in ("CompilationError", "CompileTimeAssertionFailure")


def is_compile_error(exc: BaseException) -> bool:
    """Whether an exception raised while importing/building a kernel is a compile failure."""
    name = type(exc).__name__
    if isinstance(exc, SyntaxError) or name == "CompileException" or missing_package(exc) or is_lazy_compile_error(exc):
        return True
    if isinstance(exc, subprocess.CalledProcessError):
        return True
    text = str(exc)
    return "Error building extension" in text or "nvrtc" in text.lower() and "error" in text.lower()


def compile_log(exc: BaseException, stderr_tail: str = "") -> str:
    """The compiler's own message, trimmed: the exception text (cupy/NVRTC, load_inline) or
    the captured output of a failed compiler command."""
    parts = []
    if missing_package(exc):
        parts.append(missing_package(exc))
    elif isinstance(exc, SyntaxError):
        parts.append(f"line {exc.lineno}: {exc.msg}\n{(exc.text or '').rstrip()}")
    elif isinstance(exc, subprocess.CalledProcessError):
        for stream in (exc.stderr, exc.output):
            if stream:
                parts.append(stream.decode(errors="replace") if isinstance(stream, bytes) else str(stream))
        if not parts:
            parts.append(str(exc))
    else:
        parts.append(str(exc))
    if stderr_tail.strip():
        parts.append(stderr_tail)
    text = " \n".join(parts)
    if "kittens.cuh" in text:  # say which package the missing header belongs to
        text = ("ThunderKittens is not installed (its headers include/kittens.cuh, under $THUNDERKITTENS_ROOT)\n"
                + text)
    return trim(text)


def trim(log: str) -> str:
    """Keep error lines and their context first; drop temp-folder noise; bound the size."""
    log = re.sub(r"/[\w./-]*/(tmp|torch_extensions|cupy_cache)/[\w./-]*?([\w-]+\.(?:cu|c|cpp|so|o))",
                 r"\2", log)
    lines = [ln.rstrip() for ln in log.splitlines() if ln.strip()]
    if len(lines) > MAX_LOG_LINES:
        important = [i for i, ln in enumerate(lines) if re.search(r"\berror\b|Error", ln)]
        keep = set()
        for i in important[:15]:
            keep.update(range(max(0, i - 1), min(len(lines), i + 3)))
        if not keep:
            keep = set(range(MAX_LOG_LINES))
        picked = [lines[i] for i in sorted(keep)][:MAX_LOG_LINES]
        lines = picked + [f"... ({len(lines) - len(picked)} more lines)"]
    text = "\n".join(lines)
    if len(text) > MAX_LOG_CHARS:
        text = text[:MAX_LOG_CHARS] + "\n... (trimmed)"
    return text


def short_traceback(exc: BaseException, limit_frames: int = 4) -> str:
    """The last frames of a traceback, for runtime errors."""
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-limit_frames)
    return trim("".join(lines))


_ERROR_LINE = re.compile(r"\berror\b\s*(?:[A-Z]\d+\s*)?:|\bError:|^\w*Error\b", re.IGNORECASE)


def first_errors(text: str, limit: int = 300, count: int = 2) -> str:
    """The compiler's first error lines ("k.c:5:3: error: 'y' undeclared"), not the first line of
    its log (often "In function 'softmax_rows':"); the first line when none says error."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and _ERROR_LINE.search(line) and line not in found:
            found.append(line if len(line) <= limit else line[:limit] + "...")
            if len(found) == count:
                break
    return "; ".join(found) or first_line(text, limit)


# PyTorch's advice under every CUDA error (c10/cuda/CUDAException.cpp), never the error itself
_CUDA_HINTS = ("CUDA kernel errors might be asynchronously reported", "For debugging consider passing CUDA_LAUNCH_BLOCKING",
               "Compile with `TORCH_USE_CUDA_DSA`", "Device-side assertion tracking was not enabled",
               "Search for `cuda")


def last_line(text: str, limit: int = 300) -> str:
    """The last non-empty line that is not PyTorch's CUDA advice: a Python traceback's exception."""
    lines = [line for line in text.splitlines() if not line.strip().startswith(_CUDA_HINTS)]
    return first_line("\n".join(reversed(lines)), limit)


def first_line(text: str, limit: int = 300) -> str:
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[:limit] + "..."
    return ""
