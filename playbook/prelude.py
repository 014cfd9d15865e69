"""The text every playbook kernel module shares: imports, the compile/launch boilerplate for
each target (docs/KERNEL_FORMAT.md's fast paths), and the CUDA device helpers."""

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
    return cupy.RawModule(code=source, options=("-std=c++17", f"-arch=sm_{major}{minor}"))


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

# Device helpers shared by the CUDA sources: warp and block reductions in float and double.
CUDA_COMMON = r'''
#define NEG_INF __int_as_float(0xff800000)
#define POS_INF __int_as_float(0x7f800000)
typedef long long i64;
#define DEVICE_FN __device__ __forceinline__

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// Block-wide reductions; `scratch` holds one value per warp. Every thread gets the result.
__device__ float block_max(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : NEG_INF;
    v = warp_max(v);
    __syncthreads();
    return v;
}
__device__ float block_sum(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}
__device__ double block_sum_d(double v, double* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    v = warp_sum_d(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : 0.0;
    v = warp_sum_d(v);
    __syncthreads();
    return v;
}
'''

# C helpers shared by the CPU sources.
C_COMMON = r'''
#include <math.h>
#include <stdint.h>
#include <string.h>
typedef long long i64;
#define DEVICE_FN static inline
#define NEG_INF (-INFINITY)

/* exp(x) for x <= 0 in a form the compiler can vectorise (Cody-Waite range reduction and a
   degree-6 polynomial, ~2 ulp); arguments below -87 return ~1e-38 instead of underflowing. */
static inline float exp_neg(float x) {
    x = x < -87.0f ? -87.0f : x;
    float k = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - k * 0.693359375f + k * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}
'''

# Explicit SIMD for the CPU kernels: GCC vector types as wide as the host's registers under
# -march=native (AVX-512, AVX2 or SSE, chosen at compile time), so one source serves every host.
C_SIMD = r'''
#if defined(__AVX512F__)
#define VBYTES 64
#elif defined(__AVX__)
#define VBYTES 32
#else
#define VBYTES 16
#endif
#define VL (VBYTES / 4)
typedef float vf __attribute__((vector_size(VBYTES)));
typedef int32_t vi __attribute__((vector_size(VBYTES)));
typedef float vf_u __attribute__((vector_size(VBYTES), aligned(4)));
typedef float vfh_u __attribute__((vector_size(VBYTES / 2), aligned(4)));
typedef double vd __attribute__((vector_size(VBYTES)));
static inline vf vload(const float* p) { return *(const vf_u*)p; }
static inline void vstore(float* p, vf v) { *(vf_u*)p = v; }
static inline vf vsplat(float a) { return (vf){0} + a; }
static inline vf vselect(vi mask, vf a, vf b) { return (vf)((mask & (vi)a) | (~mask & (vi)b)); }
#if defined(__AVX512F__)
#include <immintrin.h>
static inline vf vmax(vf a, vf b) { return (vf)_mm512_max_ps((__m512)a, (__m512)b); }
#elif defined(__AVX__)
#include <immintrin.h>
static inline vf vmax(vf a, vf b) { return (vf)_mm256_max_ps((__m256)a, (__m256)b); }
#else
static inline vf vmax(vf a, vf b) { return vselect(a > b, a, b); }
#endif
#if defined(__AVX512F__)
static inline vd vload_d(const float* p) { return (vd)_mm512_cvtps_pd(_mm256_loadu_ps(p)); }
#else
static inline vd vload_d(const float* p) { return __builtin_convertvector(*(const vfh_u*)p, vd); }
#endif
static inline float vsum(vf v) { float s = 0.0f; for (int l = 0; l < VL; ++l) s += v[l]; return s; }
static inline double vsum_d(vd v) { double s = 0.0; for (int l = 0; l < VL / 2; ++l) s += v[l]; return s; }
static inline float vmaxall(vf v) { float m = v[0]; for (int l = 1; l < VL; ++l) m = v[l] > m ? v[l] : m; return m; }

/* exp(x) for x <= 0, VL lanes at once: k = round(x / ln 2) (AVX-512: vrndscaleps; else the
   1.5 * 2^23 trick, which also leaves k in the low mantissa bits), r = x - k ln 2 in two steps
   (Cody-Waite), exp(r) on [-ln2/2, ln2/2] by a degree-6 Horner polynomial (Chebyshev fit,
   0.6 ulp), times 2^k (vscalefps, or built in the exponent field). Below -87.3 the result is
   clamped to ~2^-126 (a normal float) rather than 0. */
static inline vf vexp_neg(vf x) {
    x = vmax(x, vsplat(-87.3f));
#if defined(__AVX512F__)
    vf k = (vf)_mm512_roundscale_ps((__m512)(x * 1.44269504088896341f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    const vf magic = vsplat(12582912.0f);
    vf t = x * 1.44269504088896341f + magic;
    vf k = t - magic;
    vi ki = (vi)t - (vi)magic;
#endif
    vf r = x - k * 0.693359375f;
    r = r + k * 2.12194440e-4f;
    vf p = vsplat(1.394858118e-3f);
    p = p * r + 8.375128731e-3f;
    p = p * r + 4.166621715e-2f;
    p = p * r + 1.666641533e-1f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
#if defined(__AVX512F__)
    return (vf)_mm512_scalef_ps((__m512)p, (__m512)k);
#else
    return p * (vf)((ki + 127) << 23);
#endif
}
'''


def defines(params: dict) -> str:
    return "".join(f"#define {name.upper()} {value}\n" for name, value in params.items()
                   if isinstance(value, (int, float)) and not isinstance(value, bool))
