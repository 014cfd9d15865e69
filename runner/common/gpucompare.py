"""verify.err_ratio on the GPU in one pass: each element read once, the error taken in float64, reduced on
the device. PyTorch's way (float64 copies, difference, ratio, maxima, a slice at a time) moves about 45
bytes for each byte of a float32 output, and the comparisons were half of a candidate's and of its truths'
device time (docs/BENCHMARKS.md, 2026-12-07). The answer is the same bit for bit: the same IEEE
operations, rounded one at a time (no fused multiply-add), a non-finite truth matched as verify does.

cupy's NVRTC builds the module; `prepare()` compiles and loads it at the sandbox's warm-up, where nothing
holds the device and nothing is launched. Imported only inside a CUDA sandbox.
"""

from __future__ import annotations

import math
import struct

# x: the output, t: the truth, both dense and of one shape. One thread's worst ratio and difference, reduced
# over the warp, then the block's warps through atomicMax on the bits (non-negative doubles order as their
# unsigned bits). flags: 1, NaN where the truth is finite; 2, a non-finite truth not matched exactly.
SOURCE = r"""
struct f16 { unsigned short bits; };
struct bf16 { unsigned short bits; };
__device__ __forceinline__ double wide(double v) { return v; }
__device__ __forceinline__ double wide(float v) { return (double)v; }
__device__ __forceinline__ double wide(f16 v) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits)); return (double)f; }
__device__ __forceinline__ double wide(bf16 v) { return (double)__uint_as_float(((unsigned int)v.bits) << 16); }

template <typename X, typename T>
__device__ void err_ratio(const X* __restrict__ x, const T* __restrict__ t, long long n, double atol, double rtol,
                          unsigned long long* out) {
    double worst = 0.0, worst_abs = 0.0;
    unsigned int flags = 0;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        double xv = wide(x[i]), tv = wide(t[i]);
        if (isfinite(tv)) {
            double diff = fabs(__dsub_rn(xv, tv));
            if (isnan(diff)) { flags |= 1u; continue; }
            double ratio = diff == 0.0 ? 0.0 : __ddiv_rn(diff, __dadd_rn(__dmul_rn(fabs(tv), rtol), atol));
            worst = fmax(worst, ratio);
            worst_abs = fmax(worst_abs, diff);
        } else if (!((isnan(xv) && isnan(tv)) || xv == tv)) {
            flags |= 2u;
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        worst = fmax(worst, __shfl_down_sync(0xffffffffu, worst, offset));
        worst_abs = fmax(worst_abs, __shfl_down_sync(0xffffffffu, worst_abs, offset));
        flags |= __shfl_down_sync(0xffffffffu, flags, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(&out[0], (unsigned long long)__double_as_longlong(worst));
        atomicMax(&out[1], (unsigned long long)__double_as_longlong(worst_abs));
        if (flags) atomicOr(&out[2], (unsigned long long)flags);
    }
}

#define ERR_RATIO(XN, XT, TN, TT) \
extern "C" __global__ void err_##XN##_##TN(const XT* x, const TT* t, long long n, double atol, double rtol, \
                                           unsigned long long* out) { err_ratio<XT, TT>(x, t, n, atol, rtol, out); }
#define FOR_TRUTH(XN, XT) ERR_RATIO(XN, XT, float64, double) ERR_RATIO(XN, XT, float32, float) \
    ERR_RATIO(XN, XT, float16, f16) ERR_RATIO(XN, XT, bfloat16, bf16)
FOR_TRUTH(float64, double) FOR_TRUTH(float32, float) FOR_TRUTH(float16, f16) FOR_TRUTH(bfloat16, bf16)
"""

DTYPES = ("float64", "float32", "float16", "bfloat16")
THREADS = 256
MAX_BLOCKS = 4096
_module = None
_functions: dict = {}


def prepare() -> bool:
    """Compile the module and load every function (nothing launched); False where cupy cannot."""
    global _module
    if _module is not None:
        return True
    try:
        import cupy

        module = cupy.RawModule(code=SOURCE, options=("--std=c++14",))
        functions = {(x, t): module.get_function(f"err_{x}_{t}") for x in DTYPES for t in DTYPES}
    except Exception:  # noqa: BLE001 - no cupy, or no compiler: verify compares with PyTorch
        return False
    _functions.update(functions)
    _module = module
    return True


def err_ratio(x, truth, atol: float, rtol: float) -> tuple[float, float] | None:
    """(err, max_abs_err) as verify.err_ratio gives them, or None where this way does not apply (other
    dtypes, other devices, strided or differently shaped tensors, no cupy), which verify then takes."""
    import torch

    if not (x.is_cuda and truth.is_cuda and x.device == truth.device and x.shape == truth.shape
            and x.is_contiguous() and truth.is_contiguous()):
        return None
    name = (str(x.dtype).removeprefix("torch."), str(truth.dtype).removeprefix("torch."))
    if name not in _functions and not (prepare() and name in _functions):
        return None
    n = x.numel()
    if n == 0:
        return 0.0, 0.0
    import cupy
    import numpy

    out = torch.zeros(3, dtype=torch.int64, device=x.device)
    blocks = max(1, min(MAX_BLOCKS, -(-n // THREADS)))
    with cupy.cuda.Device(x.device.index or 0), cupy.cuda.ExternalStream(torch.cuda.current_stream(x.device).cuda_stream):
        _functions[name]((blocks,), (THREADS,),
                         (numpy.uint64(x.data_ptr()), numpy.uint64(truth.data_ptr()), numpy.int64(n),
                          numpy.float64(atol), numpy.float64(rtol), numpy.uint64(out.data_ptr())))
    worst_bits, abs_bits, flags = (value & 0xFFFFFFFFFFFFFFFF for value in out.tolist())
    if flags:
        return math.inf, math.inf
    return _double(worst_bits), _double(abs_bits)


def _double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]
