"""The text every playbook kernel module shares: imports, the compile/launch boilerplate for
each target (docs/KERNEL_FORMAT.md's fast paths), and the CUDA device helpers."""

from .sources import kernel_source

CPU_HEADER = '''\
import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn
'''

CPU_BUILD = '''\
def _build(source, flags):
    """Compile the C source once into a shared library and load it."""
    folder = tempfile.mkdtemp(prefix="kernel-")
    path = os.path.join(folder, "kernel.c")
    with open(path, "w") as handle:
        handle.write(source)
    library = os.path.join(folder, "kernel.so")
    compiler = os.environ.get("CC", "cc")
    command = [compiler, "-O3", "-march=native", "-shared", "-fPIC", *flags, path, "-o", library, "-lm"]
    # check=True: a failed build raises CalledProcessError carrying the compiler's message,
    # which the runner reports as a compile_error (and the engine can repair).
    subprocess.run(command, capture_output=True, text=True, check=True)
    return ctypes.CDLL(library)


_lib = _build(_SOURCE, @FLAGS@)
_n = ctypes.c_int64
_f = ctypes.c_float


def _ptr(tensor):
    return ctypes.c_void_p(tensor.data_ptr() if tensor is not None else 0)


def _launch(function, *args):
    function(*args)
'''

CUDA_HEADER = '''\
import cupy
import torch
import torch.nn as nn
'''

CUDA_BUILD = '''\
def _compile(source):
    major, minor = torch.cuda.get_device_capability()
    return cupy.RawModule(code=source, options=("-std=c++17", f"-arch=sm_{major}{minor}@ARCH@"))


_module = _compile(_SOURCE)
_kernels = {name: _module.get_function(name) for name in @KERNELS@}
@SETUP@_n = cupy.int64
_f = cupy.float32


def _ptr(tensor):
    return cupy.uint64(tensor.data_ptr() if tensor is not None else 0)


def _launch(kernel, grid, block, *args, shared=0):
    with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        kernel(grid, block, args, shared_mem=shared)
'''


def cuda_arch(suffix: str) -> str:
    """What CUDA_BUILD's @ARCH@ becomes: nothing, or an f-string field adding `suffix` (e.g. "a") to the
    target on GPUs of compute capability 9.0 and up (sm_90a, sm_100a: the arch-specific targets)."""
    return "{%r if major >= 9 else ''}" % suffix if suffix else ""


# Device helpers shared by the CUDA sources: warp and block reductions in float and double.
CUDA_COMMON = kernel_source("common/cuda_common.cuh")

# C helpers shared by the CPU sources.
C_COMMON = kernel_source("common/c_common.h")

# Explicit SIMD for the CPU kernels: GCC vector types as wide as the host's registers under
# -march=native (AVX-512, AVX2 or SSE, chosen at compile time), so one source serves every host.
C_SIMD = kernel_source("common/simd.h")


def defines(params: dict) -> str:
    return "".join(f"#define {name.upper()} {value}\n" for name, value in params.items()
                   if isinstance(value, (int, float)) and not isinstance(value, bool))
