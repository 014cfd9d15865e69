"""2D convolution (nn.Conv2d held as self.<name> so weights copy by name), alone or followed by
ReLU and max-pooling. CUDA's fast path is an implicit GEMM on matmul.py's register-blocked core:
M = batch * OH * OW output pixels, N = out channels, K = C * KH * KW, gathered on the fly."""

import textwrap

from . import Family, Parts, Recipe, bind
from .matmul import GEMM_CORE, gemm_variant
from .reading import ReadError, argument, calls, submodule


def read_conv(shape) -> dict:
    module = submodule(shape, {"Conv2d"})
    if module is None:
        raise ReadError("the playbook's conv kernels need an nn.Conv2d assigned in Model.__init__")
    return {"input": shape.first_input, "conv": module, "pool": None}


def read_conv_pool(shape) -> dict:
    facts = read_conv(shape)
    pool = submodule(shape, {"MaxPool2d"})
    if pool:
        facts["pool"] = (f"{pool}.kernel_size", f"{pool}.stride", f"{pool}.padding", f"{pool}.dilation",
                         f"{pool}.ceil_mode")
    else:
        found = calls(shape.forward, {"max_pool2d"})
        if not found:
            raise ReadError("could not find nn.MaxPool2d or F.max_pool2d in Model")
        call = found[0]
        size = argument(call, 1, "kernel_size")
        facts["pool"] = (size, argument(call, 2, "stride", "None"), argument(call, 3, "padding", "0"),
                         argument(call, 4, "dilation", "1"), argument(call, 5, "ceil_mode", "False"))
    if not calls(shape.forward, {"relu", "relu_"}) and not submodule(shape, {"ReLU"}):
        raise ReadError("the playbook's conv + ReLU + max-pool kernels need a ReLU in Model")
    return facts


_FORWARD_CONV = """
{bind_input}conv = {conv}
if x.dtype != torch.float32 or x.dim() != 4:
    raise TypeError("this kernel takes a 4-D float32 input")
if conv.groups != 1 or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
    raise ValueError("this kernel supports groups=1 with numeric zero padding")
x = x.contiguous()
weight = conv.weight.contiguous()
bias = conv.bias.contiguous() if conv.bias is not None else None
nb, cin, h, w = x.shape
cout, _, kh, kw = weight.shape
(sh, sw), (ph, pw), (dh, dw) = conv.stride, conv.padding, conv.dilation
oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
geometry = [_n(v) for v in (nb, cin, h, w, cout, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw)]
"""

_FORWARD_POOL = """
def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)
pool_k, pool_s, pool_p, pool_d, pool_ceil = {pool}
(qh, qw), (qph, qpw), (qdh, qdw) = _pair(pool_k), _pair(pool_p), _pair(pool_d)
(qsh, qsw) = _pair(pool_s) if pool_s is not None and pool_s != [] else (qh, qw)
if pool_ceil or (qdh, qdw) != (1, 1):
    raise ValueError("this kernel supports max-pooling without ceil_mode or dilation")
poh = (oh + 2 * qph - qh) // qsh + 1
pow_ = (ow + 2 * qpw - qw) // qsw + 1
pool_geometry = [_n(v) for v in (qh, qw, qsh, qsw, qph, qpw)]
"""


def forward_conv(facts: dict, launch: str) -> str:
    return _FORWARD_CONV.format(bind_input=bind('x', facts['input']), **facts) + f"""
y = torch.empty((nb, cout, oh, ow), dtype=torch.float32, device=x.device)
if y.numel():
{textwrap.indent(launch, '    ')}
return y
"""


def forward_conv_pool(facts: dict, launch: str) -> str:
    pool = _FORWARD_POOL.format(pool=", ".join(facts["pool"]))
    return _FORWARD_CONV.format(bind_input=bind('x', facts['input']), **facts) + pool + f"""
conv_out = torch.empty((nb, cout, oh, ow), dtype=torch.float32, device=x.device)
y = torch.empty((nb, cout, poh, pow_), dtype=torch.float32, device=x.device)
if y.numel():
{textwrap.indent(launch, '    ')}
return y
"""


_GEOMETRY_C = ("i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 OH, i64 OW, i64 SH, i64 SW, "
               "i64 PH, i64 PW, i64 DH, i64 DW")

# -- CPU -----------------------------------------------------------------------------------

# One output plane (n, oc) at a time. MODE 0: the textbook seven loops with a bounds test per tap.
# MODE 1: taps outer, output pixels inner, valid ranges hoisted so the inner loop has no branches.
# Sums in double: offset inputs make long fp32 chains cancel badly.
_C = r'''
#include <stdlib.h>
static void conv_plane(const float* x, const float* w, const float* bias, float* out, i64 n, i64 oc,
                       GEOMETRY) {
    const float* wo = w + oc * C * KH * KW;
#if MODE == 0
    for (i64 oh = 0; oh < OH; ++oh)
        for (i64 ow = 0; ow < OW; ++ow) {
            double s = bias ? bias[oc] : 0.0;
            for (i64 c = 0; c < C; ++c)
                for (i64 kh = 0; kh < KH; ++kh)
                    for (i64 kw = 0; kw < KW; ++kw) {
                        i64 ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
                        if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                            s += (double)x[((n * C + c) * H + ih) * W + iw] * wo[(c * KH + kh) * KW + kw];
                    }
            out[oh * OW + ow] = RELU && s < 0.0 ? 0.0f : (float)s;
        }
#else
    double* acc = (double*)malloc(sizeof(double) * OH * OW);
    for (i64 p = 0; p < OH * OW; ++p) acc[p] = bias ? bias[oc] : 0.0;
    for (i64 c = 0; c < C; ++c)
        for (i64 kh = 0; kh < KH; ++kh)
            for (i64 kw = 0; kw < KW; ++kw) {
                float wv = wo[(c * KH + kh) * KW + kw];
                for (i64 oh = 0; oh < OH; ++oh) {
                    i64 ih = oh * SH - PH + kh * DH;
                    if (ih < 0 || ih >= H) continue;
                    const float* xr = x + ((n * C + c) * H + ih) * W;
                    /* ow range with 0 <= ow*SW - PW + kw*DW < W */
                    i64 off = kw * DW - PW, lo = off < 0 ? (-off + SW - 1) / SW : 0;
                    i64 hi = (W - 1 - off) < 0 ? -1 : (W - 1 - off) / SW;
                    if (hi > OW - 1) hi = OW - 1;
                    double* arow = acc + oh * OW;
                    for (i64 ow = lo; ow <= hi; ++ow) arow[ow] += (double)wv * xr[ow * SW + off];
                }
            }
    for (i64 p = 0; p < OH * OW; ++p) out[p] = RELU && acc[p] < 0.0 ? 0.0f : (float)acc[p];
    free(acc);
#endif
}

static void pool_plane(const float* in, float* out, i64 OH, i64 OW, i64 PH_, i64 PW_,
                       i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW) {
    for (i64 y = 0; y < PH_; ++y)
        for (i64 x = 0; x < PW_; ++x) {
            float m = -INFINITY;
            for (i64 a = 0; a < QH; ++a)
                for (i64 b = 0; b < QW; ++b) {
                    i64 r = y * QSH - QPH + a, c = x * QSW - QPW + b;
                    if (r < 0 || r >= OH || c < 0 || c >= OW) continue;
                    float v = in[r * OW + c];
                    if (v > m || v != v) m = v;
                }
            out[y * PW_ + x] = m;
        }
}

void conv2d(const float* x, const float* w, const float* bias, float* out, GEOMETRY) {
#if PARALLEL && DYNAMIC
    #pragma omp parallel for collapse(2) schedule(dynamic)
#elif PARALLEL
    #pragma omp parallel for collapse(2) schedule(static)
#endif
    for (i64 n = 0; n < N; ++n)
        for (i64 oc = 0; oc < OC; ++oc)
            conv_plane(x, w, bias, out + (n * OC + oc) * OH * OW, n, oc, N, C, H, W, OC, KH, KW, OH, OW,
                       SH, SW, PH, PW, DH, DW);
}

/* conv + ReLU + max-pool; each (n, oc) plane is convolved into `scratch` (its own slice), then pooled
   while it is still in cache. */
void conv_relu_pool(const float* x, const float* w, const float* bias, float* scratch, float* out, GEOMETRY,
                    i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW, i64 POH, i64 POW) {
#if PARALLEL && DYNAMIC
    #pragma omp parallel for collapse(2) schedule(dynamic)
#elif PARALLEL
    #pragma omp parallel for collapse(2) schedule(static)
#endif
    for (i64 n = 0; n < N; ++n)
        for (i64 oc = 0; oc < OC; ++oc) {
            float* plane = scratch + (n * OC + oc) * OH * OW;
            conv_plane(x, w, bias, plane, n, oc, N, C, H, W, OC, KH, KW, OH, OW, SH, SW, PH, PW, DH, DW);
            pool_plane(plane, out + (n * OC + oc) * POH * POW, OH, OW, POH, POW, QH, QW, QSH, QSW, QPH, QPW);
        }
}
'''.replace("GEOMETRY", _GEOMETRY_C)


def _cpu_conv(params):
    launch = "_launch('conv2d', _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), *geometry)"
    return Parts(_C, launch, flags=("-fopenmp",) if params["parallel"] else ())


def _cpu_pool(params):
    launch = ("_launch('conv_relu_pool', _ptr(x), _ptr(weight), _ptr(bias), _ptr(conv_out), _ptr(y), *geometry, "
              "*pool_geometry, _n(poh), _n(pow_))")
    return Parts(_C, launch, flags=("-fopenmp",) if params["parallel"] else ())


def _cpu_recipes(render, relu):
    base = {"relu": relu}
    return (
        Recipe("naive", "Naive direct convolution (seven nested loops)",
               "The straightforward translation: for every output pixel, sum input x weight over channels and the "
               "kernel window in double, testing the bounds of each tap."
               + (" Then ReLU and a max-pool pass." if relu else ""),
               ({**base, "mode": 0, "parallel": 0, "dynamic": 0},), render),
        Recipe("hoisted_openmp", "Taps outside, pixels inside with hoisted bounds, OpenMP over output planes",
               "Turn the loops inside out: for each weight tap, stream a branch-free row of output pixels (the "
               "valid range computed once per row), which the compiler vectorises; (batch, out-channel) planes "
               "go to different cores." + (" Each plane is pooled right after it is computed, while it is hot "
                                           "in cache." if relu else ""),
               ({**base, "mode": 1, "parallel": 1, "dynamic": 0}, {**base, "mode": 1, "parallel": 0, "dynamic": 0}),
               render),
        Recipe("openmp_naive", "OpenMP over output planes, direct loops",
               "Keep the direct loops but split (batch, out-channel) planes across cores with a collapsed "
               "parallel for, statically or dynamically scheduled (planes at the border do less work).",
               ({**base, "mode": 0, "parallel": 1, "dynamic": 0}, {**base, "mode": 0, "parallel": 1, "dynamic": 1}),
               render),
    )


# -- CUDA ----------------------------------------------------------------------------------

_CU_DIRECT = r'''
// One thread per output value; RELU fuses the activation.
extern "C" __global__ void conv_direct(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ bias, float* __restrict__ out, GEOMETRY) {
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * OC * OH * OW) return;
    i64 ow = idx % OW, oh = (idx / OW) % OH, oc = (idx / (OW * OH)) % OC, n = idx / (OW * OH * OC);
    float s = bias ? bias[oc] : 0.0f;
    for (i64 c = 0; c < C; ++c)
        for (i64 kh = 0; kh < KH; ++kh) {
            i64 ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (i64 kw = 0; kw < KW; ++kw) {
                i64 iw = ow * SW - PW + kw * DW;
                if (iw >= 0 && iw < W)
                    s = fmaf(x[((n * C + c) * H + ih) * W + iw], w[((oc * C + c) * KH + kh) * KW + kw], s);
            }
        }
    out[idx] = RELU && s < 0.0f ? 0.0f : s;
}
'''

_CU_OC_BLOCKED = r'''
// Direct convolution, register-blocked over output channels: a block owns PIX output pixels of
// one image and OCB output channels, whose weights sit in shared memory as [tap][channel] so
// every thread reads the same float4 (a broadcast). Each input value loaded feeds OCB FMAs.
extern "C" __global__ void __launch_bounds__(PIX) conv_ocb(const float* __restrict__ x, const float* __restrict__ w,
                                                          const float* __restrict__ bias, float* __restrict__ out,
                                                          GEOMETRY) {
    extern __shared__ __align__(16) float ws[];
    const int K = (int)(C * KH * KW), oc0 = blockIdx.y * OCB;
    const i64 n = blockIdx.z;
    for (int e = threadIdx.x; e < OCB * K; e += blockDim.x) {
        int tap = e / OCB, j = e % OCB;
        ws[e] = oc0 + j < OC ? w[(i64)(oc0 + j) * K + tap] : 0.0f;
    }
    __syncthreads();
    const i64 p = (i64)blockIdx.x * PIX + threadIdx.x;
    if (p >= OH * OW) return;
    const int oh = (int)(p / OW), ow = (int)(p % OW);
    float acc[OCB];
    #pragma unroll
    for (int j = 0; j < OCB; ++j) acc[j] = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* xc = x + (n * C + c) * H * W;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * (int)SH - (int)PH + kh * (int)DH;
            if (ih < 0 || ih >= H) continue;
            const float* xr = xc + (i64)ih * W;
            const float4* wrow = reinterpret_cast<const float4*>(ws + (c * KH + kh) * KW * OCB);
            for (int kw = 0; kw < KW; ++kw) {
                int iw = ow * (int)SW - (int)PW + kw * (int)DW;
                if (iw < 0 || iw >= W) continue;
                float v = __ldg(xr + iw);
                const float4* wp = wrow + kw * (OCB / 4);
                #pragma unroll
                for (int j = 0; j < OCB / 4; ++j) {
                    float4 q = wp[j];
                    acc[4 * j] = fmaf(v, q.x, acc[4 * j]);
                    acc[4 * j + 1] = fmaf(v, q.y, acc[4 * j + 1]);
                    acc[4 * j + 2] = fmaf(v, q.z, acc[4 * j + 2]);
                    acc[4 * j + 3] = fmaf(v, q.w, acc[4 * j + 3]);
                }
            }
        }
    }
    #pragma unroll
    for (int j = 0; j < OCB; ++j) {
        int oc = oc0 + j;
        if (oc >= OC) break;
        float r = acc[j] + (bias ? bias[oc] : 0.0f);
        out[(n * OC + oc) * OH * OW + p] = RELU && r < 0.0f ? 0.0f : r;
    }
}
'''

_CU_IMPLICIT = r'''
// Implicit GEMM: A[m][k] = x at output pixel m and tap k (0 outside the image), B[k][n] = w[n][k].
__device__ __forceinline__ float im2col(const float* __restrict__ x, int m, int k, int C, int H, int W, int KH,
                                        int KW, int OH, int OW, int SH, int SW, int PH, int PW, int DH, int DW) {
    int ow = m % OW, t = m / OW, oh = t % OH, n = t / OH;
    int kw = k % KW, t2 = k / KW, kh = t2 % KH, c = t2 / KH;
    int ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
    if (ih < 0 || ih >= H || iw < 0 || iw >= W) return 0.0f;
    return __ldg(x + (((i64)n * C + c) * H + ih) * W + iw);
}
#define GEMM_NAME conv_gemm
#define GEMM_PARAMS const float* __restrict__ X, const float* __restrict__ Wt, const float* __restrict__ bias, \
                    float* __restrict__ Y, GEOMETRY
#define GEMM_SETUP const i64 M = N * OH * OW, K = C * KH * KW; const i64 Ncols = OC; \
                   const int c_ = C, h_ = H, w_ = W, kh_ = KH, kw_ = KW, oh_ = OH, ow_ = OW;
#define LOAD_A(m, k) im2col(X, (int)(m), (int)(k), c_, h_, w_, kh_, kw_, oh_, ow_, (int)SH, (int)SW, (int)PH, \
                            (int)PW, (int)DH, (int)DW)
#define LOAD_B(k, n) __ldg(Wt + (n) * K + (k))
#define STORE_C(m, n, v) { float r_ = (v) + (bias ? bias[n] : 0.0f); \
                           Y[((m) / (OH * OW) * OC + (n)) * (OH * OW) + (m) % (OH * OW)] = RELU && r_ < 0.0f ? 0.0f : r_; }
'''

_CU_POOL = r'''
extern "C" __global__ void max_pool(const float* __restrict__ in, float* __restrict__ out, i64 planes, i64 OH, i64 OW,
                                    i64 POH, i64 POW, i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW) {
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= planes * POH * POW) return;
    i64 px = idx % POW, py = (idx / POW) % POH, plane = idx / (POW * POH);
    const float* p = in + plane * OH * OW;
    float m = NEG_INF;
    for (i64 a = 0; a < QH; ++a) {
        i64 r = py * QSH - QPH + a;
        if (r < 0 || r >= OH) continue;
        for (i64 b = 0; b < QW; ++b) {
            i64 c = px * QSW - QPW + b;
            if (c < 0 || c >= OW) continue;
            float v = p[r * OW + c];
            if (v > m || v != v) m = v;
        }
    }
    out[idx] = m;
}
'''


def _cu_source(body: str, pool: bool) -> str:
    return (body + (_CU_POOL if pool else "")).replace("GEOMETRY", _GEOMETRY_C)


_POOL_LAUNCH = ("\n_launch('max_pool', ((y.numel() + 255) // 256,), (256,), _ptr(conv_out), _ptr(y), _n(nb * cout), "
                "_n(oh), _n(ow), _n(poh), _n(pow_), *pool_geometry)")


def _cuda_direct(params):
    pool = params["relu"]
    out = "conv_out" if pool else "y"
    launch = (f"_launch('conv_direct', (({out}.numel() + 255) // 256,), (256,), _ptr(x), _ptr(weight), _ptr(bias), "
              f"_ptr({out}), *geometry)") + (_POOL_LAUNCH if pool else "")
    return Parts(_cu_source(_CU_DIRECT, pool), launch, kernels=("conv_direct",) + (("max_pool",) if pool else ()))


def _cuda_gemm(params):
    pool = params["relu"]
    out = "conv_out" if pool else "y"
    threads = (params["bm"] // params["tm"]) * (params["bn"] // params["tn"])
    bm, bn = params["bm"], params["bn"]
    grid = f"((cout + {bn - 1}) // {bn}, (nb * oh * ow + {bm - 1}) // {bm})"
    launch = (f"_launch('conv_gemm', {grid}, ({threads},), _ptr(x), _ptr(weight), _ptr(bias), _ptr({out}), "
              "*geometry)") + (_POOL_LAUNCH if pool else "")
    core = GEMM_CORE.replace("gn < N", "gn < Ncols")
    return Parts(_cu_source(_CU_IMPLICIT + core, pool), launch,
                 kernels=("conv_gemm",) + (("max_pool",) if pool else ()))


def _cuda_oc_blocked(params):
    pool, ocb, pix = params["relu"], params["ocb"], params["pix"]
    out = "conv_out" if pool else "y"
    fallback = gemm_variant(128, 96, 8, 8, 6, 1)
    launch = f"""
shared = {ocb} * cin * kh * kw * 4
if shared <= _SHARED_LIMIT:
    _launch('conv_ocb', ((oh * ow + {pix - 1}) // {pix}, (cout + {ocb - 1}) // {ocb}, nb), ({pix},), _ptr(x),
            _ptr(weight), _ptr(bias), _ptr({out}), *geometry, shared=shared)
else:
    _launch('conv_gemm', ((cout + 95) // 96, (nb * oh * ow + 127) // 128), (256,), _ptr(x), _ptr(weight), _ptr(bias),
            _ptr({out}), *geometry)""" + (_POOL_LAUNCH if pool else "")
    # the weights of a block may exceed 48 KB of shared memory: opt in to the device's maximum
    setup = ("_SHARED_LIMIT = cupy.cuda.Device().attributes['MaxSharedMemoryPerBlockOptin']\n"
             "_kernels['conv_ocb'].max_dynamic_shared_size_bytes = _SHARED_LIMIT\n")
    macros = "".join(f"#define {k.upper()} {v}\n" for k, v in fallback.items())
    core = GEMM_CORE.replace("gn < N", "gn < Ncols")
    source = _cu_source(macros + _CU_OC_BLOCKED + _CU_IMPLICIT + core, pool)
    return Parts(source, launch, kernels=("conv_ocb", "conv_gemm") + (("max_pool",) if pool else ()), setup=setup)


def _cuda_recipes(relu):
    tail = " ReLU is applied in the epilogue and a small kernel max-pools the result." if relu else ""
    return (
        Recipe("direct", "Direct convolution, one thread per output",
               "The straightforward kernel: each thread loops over input channels and the kernel window for one "
               "output value." + (" ReLU fused into the store, then a max-pool kernel." if relu else ""),
               ({"relu": relu},), _cuda_direct),
        Recipe("direct_oc_blocked",
               "Direct convolution blocked over output channels, weights broadcast from shared memory",
               "With few input channels and a large kernel window (K = C x KH x KW taps), the gather of an implicit "
               "GEMM costs more than its FMAs. Instead a block keeps the weights of OCB output channels in shared "
               "memory, laid out tap-major so all threads read the same float4 (a broadcast), and each thread owns "
               "one output pixel: every input value it loads feeds OCB FMAs in registers." + tail,
               tuple({"relu": relu, "ocb": ocb, "pix": pix} for ocb, pix in ((48, 256), (32, 128), (16, 128))),
               _cuda_oc_blocked),
        Recipe("implicit_gemm_db", "Implicit GEMM with double-buffered tiles",
               "The implicit GEMM with two shared-memory stages: the gather of the next K slice (address "
               "arithmetic and all) overlaps the FMAs on the current one." + tail,
               tuple({**gemm_variant(*shape), "relu": relu} for shape in
                     ((256, 96, 8, 8, 6, 1), (128, 96, 8, 8, 6, 1), (128, 64, 16, 8, 4, 1))), _cuda_gemm),
        Recipe("implicit_gemm", "Implicit GEMM with register blocking (im2col on the fly)",
               "Treat the convolution as a GEMM of (batch x OH x OW) pixels by out-channels over C x KH x KW taps, "
               "without materialising im2col: tiles of the virtual patch matrix are gathered straight into shared "
               "memory, weights are the other operand, and each thread accumulates a TM x TN register tile in fp32. "
               "Bias is added in the epilogue." + tail,
               tuple({**gemm_variant(*shape), "relu": relu} for shape in
                     ((128, 96, 8, 8, 6, 0), (128, 64, 8, 8, 4, 0), (64, 32, 8, 4, 4, 0))), _cuda_gemm),
    )


FAMILIES = (
    Family("conv2d", read_conv, forward_conv,
           {"cpu": _cpu_recipes(_cpu_conv, 0), "cuda": _cuda_recipes(0)}),
    Family("conv_relu_maxpool", read_conv_pool, forward_conv_pool,
           {"cpu": _cpu_recipes(_cpu_pool, 1), "cuda": _cuda_recipes(1)}),
)
