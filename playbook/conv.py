"""2D convolution (nn.Conv2d held as self.<name> so weights copy by name), alone or followed by
ReLU and max-pooling. CUDA's fastest idea is a register-tiled direct convolution (11x11 stride-4
kernels, AlexNet's conv1; other shapes fall back to the output-channel-blocked direct kernel); the
implicit GEMMs run on matmul.py's register-blocked core: M = batch * OH * OW output pixels,
N = out channels, K = C * KH * KW, gathered on the fly."""

import textwrap

from .matmul import GEMM_CORE, gemm_variant
from .reading import ReadError, argument, calls, submodule
from .recipes import Family, Parts, Recipe, bind


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

_CU_REG_TILED = r'''
// Direct convolution, register-tiled over (out-channel, pixel). A block owns DC_R output rows x
// DC_G*DC_PT output columns of one image and DC_OCB output channels. Per input channel it stages the
// input rows those outputs need (zero padding included) and the channel's weights, tap-major
// [kh][kw][oc], in shared memory with cp.async (8-byte input pairs and 16-byte weight quads where
// aligned; DC_DB: two buffers, the next channel loads while this one computes). Each thread owns
// DC_OCT channels x DC_PT consecutive pixels of one row: per kernel row it loads the (DC_PT-1)*SW+KW
// input values its pixels touch into registers (float4), and per tap DC_OCT weights (float4
// broadcasts), feeding DC_OCT*DC_PT FMAs. The output tile goes back through shared memory so the
// global writes coalesce; with pooling, ReLU + max-pool run there (windows that straddle two blocks
// are combined with an integer atomicMax, valid because post-ReLU values are >= 0, into an output
// zeroed beforehand).
#ifndef DC_DB
#define DC_DB 0
#endif
#ifndef DC_RPAD
#define DC_RPAD 0
#endif
__device__ __forceinline__ unsigned dc_smem(const void* p) {
    unsigned d;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(d) : "l"(p));
    return d;
}
#if __CUDA_ARCH__ >= 800
#define DC_CP(N) __device__ __forceinline__ void dc_cp##N(unsigned dst, const float* src, bool ok) { \
    asm volatile("cp.async.ca.shared.global [%0], [%1], " #N ", %2;\n" :: "r"(dst), "l"(src), "r"(ok ? N : 0)); }
DC_CP(4) DC_CP(8) DC_CP(16)
__device__ __forceinline__ void dc_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void dc_wait() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
#else
#define DC_CP(N) __device__ __forceinline__ void dc_cp##N(unsigned dst, const float* src, bool ok) { \
    for (int i = 0; i < N / 4; ++i) { float v = ok ? src[i] : 0.0f; \
        asm volatile("st.shared.f32 [%0], %1;" :: "r"(dst + 4 * i), "f"(v)); } }
DC_CP(4) DC_CP(8) DC_CP(16)
__device__ __forceinline__ void dc_commit() {}
template <int N> __device__ __forceinline__ void dc_wait() {}
#endif

// ReLU'd conv tile [ocs][rows][OW] (row pitch tw) -> the max-pool windows that touch rows
// [oh0, oh0 + rows). Kept out of line: the main loop's registers are not live here.
__device__ __noinline__ void dc_pool_tile(const float* tile, float* __restrict__ out, int rt, int tw, int nth, int t,
                                          int n, int oc0, int oh0, int rows, int ocs, int OC, int OH, int OW, int QH,
                                          int QW, int QSH, int QSW, int QPH, int QPW, int POH, int POW) {
    int lo = oh0 + QPH - QH + 1;
    const int py0 = lo <= 0 ? 0 : (lo + QSH - 1) / QSH, py1 = min(POH - 1, (oh0 + rows - 1 + QPH) / QSH);
    const int npy = py1 - py0 + 1;
    for (int e = t; e < ocs * npy * POW; e += nth) {
        int j = e / (npy * POW), q = e - j * (npy * POW), py = py0 + q / POW, px = q % POW;
        int r0 = py * QSH - QPH, c0 = px * QSW - QPW;
        int ra = max(r0, 0), rb = min(r0 + QH, OH), la = max(ra, oh0), lb = min(rb, oh0 + rows);
        int ca = max(c0, 0), cb = min(c0 + QW, OW);
        float m = NEG_INF;
        for (int rr = la; rr < lb; ++rr)
            for (int cc = ca; cc < cb; ++cc) {
                float v = tile[(j * rt + rr - oh0) * tw + cc];
                if (v > m || v != v) m = v;
            }
        float* dst = out + ((i64)(n * OC + oc0 + j) * POH + py) * POW + px;
        if (la == ra && lb == rb) *dst = m;  // the whole window lies in this block
        else if (la < lb) atomicMax(reinterpret_cast<int*>(dst), __float_as_int(m));
    }
}

template <int KH_, int KW_, int SH_, int SW_>
struct DcTile {
    static constexpr int TR = DC_R, TG = DC_G, TPT = DC_PT, TOCT = DC_OCT, TOCB = DC_OCB;
    static constexpr int NPIX = TR * TG, NTH = NPIX * (TOCB / TOCT), TW = TG * TPT, TAPS = KH_ * KW_;
    static constexpr int IR = (TR - 1) * SH_ + KH_;                   // input rows a block reads
    static constexpr int XN = (TPT - 1) * SW_ + KW_;                  // inputs one thread's pixels touch per row
    static constexpr int XN4 = (XN + 3) / 4 * 4, XSTEP = TPT * SW_;
    static constexpr int P = ((TG - 1) * XSTEP + XN4 + 3) / 4 * 4;   // staged columns (row pitch)
    // input row `row` starts at row * P + RPAD * (row / SH): with RPAD = 12 the rows that neighbouring
    // output rows read at the same kernel row fall on other banks (fewer float4 load conflicts)
    static constexpr int RPAD = DC_RPAD;
    static constexpr int XS = (IR * P + RPAD * ((IR - 1) / SH_ + 1) + 3) / 4 * 4;
    static constexpr int STAGE = XS + TAPS * TOCB;                    // floats per buffer
    static constexpr bool VEC = XSTEP % 4 == 0;
    static_assert(TOCT % 4 == 0 && TOCB % TOCT == 0, "DC_OCT must divide DC_OCB and be a multiple of 4");

    static __device__ __forceinline__ int rowoff(int row) { return row * P + RPAD * (row / SH_); }

    // input rows into shared memory, V (1 or 2) floats per cp.async; each thread keeps one column
    template <int V>
    static __device__ __forceinline__ void stage_x(unsigned xs, const float* xc, int ih0, int iw0, int H, int W,
                                                   int t) {
        constexpr int PV = P / V;
        if constexpr (NTH >= PV) {
            constexpr int RS = NTH / PV;  // rows per sweep
            const int cc = t % PV, r0 = t / PV;
            if (r0 < RS) {
                const int iw = iw0 + V * cc;
                const bool okc = (unsigned)iw < (unsigned)W;
                for (int rr = r0; rr < IR; rr += RS) {
                    const int ih = ih0 + rr;
                    const bool ok = okc && (unsigned)ih < (unsigned)H;
                    const unsigned dst = xs + 4u * (rowoff(rr) + V * cc);
                    if constexpr (V == 2) dc_cp8(dst, ok ? xc + ih * W + iw : xc, ok);
                    else dc_cp4(dst, ok ? xc + ih * W + iw : xc, ok);
                }
            }
        } else {
            for (int e = t; e < IR * PV; e += NTH) {
                const int rr = e / PV, cc = e - rr * PV, ih = ih0 + rr, iw = iw0 + V * cc;
                const bool ok = (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
                const unsigned dst = xs + 4u * (rowoff(rr) + V * cc);
                if constexpr (V == 2) dc_cp8(dst, ok ? xc + ih * W + iw : xc, ok);
                else dc_cp4(dst, ok ? xc + ih * W + iw : xc, ok);
            }
        }
    }

    // one input channel's rows and weights into a buffer; t = thread index
    static __device__ __forceinline__ void stage(float* buf, const float* xc, const float* wc, int ih0, int iw0,
                                                 int H, int W, int OC, int oc0, int t) {
        const unsigned xs = dc_smem(buf), ws = dc_smem(buf + XS);
        if (((iw0 | W) & 1) == 0) stage_x<2>(xs, xc, ih0, iw0, H, W, t);  // pairs: entirely inside or outside
        else stage_x<1>(xs, xc, ih0, iw0, H, W, t);
        if ((OC & 3) == 0) {  // weights [tap][OC] -> [tap][TOCB], 16 bytes at a time
            constexpr int Q = TOCB / 4;
            for (int e = t; e < TAPS * Q; e += NTH) {
                int tap = e / Q, j = (e - tap * Q) * 4;
                bool ok = oc0 + j < OC;
                dc_cp16(ws + 16u * e, ok ? wc + tap * OC + oc0 + j : wc, ok);
            }
        } else {
            for (int e = t; e < TAPS * TOCB; e += NTH) {
                int tap = e / TOCB, j = e - tap * TOCB;
                bool ok = oc0 + j < OC;
                dc_cp4(ws + 4u * e, ok ? wc + tap * OC + oc0 + j : wc, ok);
            }
        }
        dc_commit();
    }

    static __device__ __forceinline__ void compute(const float* buf, int r, int g, int og, float (&acc)[TOCT][TPT]) {
        const float* xb = buf + rowoff(r * SH_) + g * XSTEP;
        const float* wb = buf + XS + og * TOCT;
        #pragma unroll 1
        for (int kh = 0; kh < KH_; ++kh) {
            float xv[XN4];
            const float* xk = xb + kh * P + RPAD * (kh / SH_);
            if constexpr (!VEC) {
                #pragma unroll
                for (int q = 0; q < XN4; ++q) xv[q] = xk[q];
            } else {
                #pragma unroll
                for (int q = 0; q < XN4 / 4; ++q) {
                    float4 v = *reinterpret_cast<const float4*>(xk + 4 * q);
                    xv[4 * q] = v.x; xv[4 * q + 1] = v.y; xv[4 * q + 2] = v.z; xv[4 * q + 3] = v.w;
                }
            }
            const float* wk = wb + kh * KW_ * TOCB;
            #pragma unroll
            for (int kw = 0; kw < KW_; ++kw) {
                float wv[TOCT];
                #pragma unroll
                for (int j = 0; j < TOCT / 4; ++j) {
                    float4 q = *reinterpret_cast<const float4*>(wk + kw * TOCB + 4 * j);
                    wv[4 * j] = q.x; wv[4 * j + 1] = q.y; wv[4 * j + 2] = q.z; wv[4 * j + 3] = q.w;
                }
                #pragma unroll
                for (int p = 0; p < TPT; ++p)
                    #pragma unroll
                    for (int o = 0; o < TOCT; ++o) acc[o][p] = fmaf(xv[p * SW_ + kw], wv[o], acc[o][p]);
            }
        }
    }
};

template <int KH_, int KW_, int SH_, int SW_>
__device__ __forceinline__ void dc_body(const float* __restrict__ x, const float* __restrict__ wt,
                                        const float* __restrict__ bias, float* __restrict__ out, int C, int H, int W,
                                        int OC, int OH, int OW, int PH, int PW, int QH, int QW, int QSH, int QSW,
                                        int QPH, int QPW, int POH, int POW) {
    using T = DcTile<KH_, KW_, SH_, SW_>;
    constexpr int R_ = T::TR, G_ = T::TG, PT_ = T::TPT, OCT_ = T::TOCT, OCB_ = T::TOCB, NPIX = T::NPIX, NTH = T::NTH;
    constexpr int TW = T::TW, TAPS = T::TAPS;
    extern __shared__ __align__(16) float smem[];
    const int tilesW = (OW + TW - 1) / TW;
    const int oh0 = (int)(blockIdx.x / tilesW) * R_, ow0 = (int)(blockIdx.x % tilesW) * TW;
    const int oc0 = blockIdx.y * OCB_, n = blockIdx.z, t = threadIdx.x;
    const int og = t / NPIX, pix = t % NPIX, r = pix / G_, g = pix % G_;
    const int ih0 = oh0 * SH_ - PH, iw0 = ow0 * SW_ - PW;
    const float* xn = x + (i64)n * C * H * W;
    float acc[OCT_][PT_];
    #pragma unroll
    for (int o = 0; o < OCT_; ++o)
        #pragma unroll
        for (int p = 0; p < PT_; ++p) acc[o][p] = 0.0f;
    if constexpr (DC_DB) {  // two buffers: channel c + 1 loads while channel c computes
        T::stage(smem, xn, wt, ih0, iw0, H, W, OC, oc0, t);
        for (int c = 0; c < C; ++c) {
            if (c + 1 < C) {
                T::stage(smem + ((c + 1) & 1) * T::STAGE, xn + (i64)(c + 1) * H * W, wt + (i64)(c + 1) * TAPS * OC,
                         ih0, iw0, H, W, OC, oc0, t);
                dc_wait<1>();
            } else {
                dc_wait<0>();
            }
            __syncthreads();
            T::compute(smem + (c & 1) * T::STAGE, r, g, og, acc);
            __syncthreads();  // the buffer is free for channel c + 2
        }
    } else {
        for (int c = 0; c < C; ++c) {
            if (c) __syncthreads();  // every thread is done with the previous channel
            T::stage(smem, xn + (i64)c * H * W, wt + (i64)c * TAPS * OC, ih0, iw0, H, W, OC, oc0, t);
            dc_wait<0>();
            __syncthreads();
            T::compute(smem, r, g, og, acc);
        }
    }
    // epilogue. A full tile without pooling: bias (+ ReLU) straight from registers (each warp's stores
    // cover whole output rows, merged in L2). Otherwise through a [OCB][R][TW] tile in shared memory.
    if (POH == 0 && oh0 + R_ <= OH && ow0 + TW <= OW && oc0 + OCB_ <= OC) {  // uniform across the block
        const i64 plane = (i64)OH * OW;
        float* ob = out + ((i64)(n * OC + oc0 + og * OCT_) * OH + oh0 + r) * OW + ow0 + g * PT_;
        #pragma unroll
        for (int o = 0; o < OCT_; ++o) {
            float b = bias != nullptr ? bias[oc0 + og * OCT_ + o] : 0.0f;
            #pragma unroll
            for (int p = 0; p < PT_; ++p) {
                float v = acc[o][p] + b;
                if (RELU) v = v < 0.0f ? 0.0f : v;
                ob[o * plane + p] = v;
            }
        }
        return;
    }
    __syncthreads();
    float* tile = smem;
    #pragma unroll
    for (int o = 0; o < OCT_; ++o) {
        int oc = oc0 + og * OCT_ + o;
        float b = bias != nullptr && oc < OC ? bias[oc] : 0.0f;
        #pragma unroll
        for (int p = 0; p < PT_; ++p) {
            float v = acc[o][p] + b;
            if (RELU || POH) v = v < 0.0f ? 0.0f : v;
            tile[((og * OCT_ + o) * R_ + r) * TW + g * PT_ + p] = v;
        }
    }
    __syncthreads();
    const int rows = min(R_, OH - oh0), cols = min(TW, OW - ow0), ocs = min(OCB_, OC - oc0);
    if (POH == 0) {
        for (int e = t; e < OCB_ * R_ * TW; e += NTH) {
            int j = e / (R_ * TW), q = e - j * (R_ * TW), rr = q / TW, cc = q - rr * TW;
            if (j < ocs && rr < rows && cc < cols)
                out[((i64)(n * OC + oc0 + j) * OH + oh0 + rr) * OW + ow0 + cc] = tile[e];
        }
    } else {  // ReLU + max-pool (POH > 0); the block spans the full width (the launch checks OW <= TW)
        dc_pool_tile(tile, out, R_, TW, NTH, t, n, oc0, oh0, rows, ocs, OC, OH, OW, QH, QW, QSH, QSW, QPH, QPW, POH,
                     POW);
    }
}

#define DC_ARGS const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias, \
                float* __restrict__ out, GEOMETRY, i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW, i64 POH, i64 POW
#define DC_PASS x, wt, bias, out, (int)C, (int)H, (int)W, (int)OC, (int)OH, (int)OW, (int)PH, (int)PW, (int)QH, \
                (int)QW, (int)QSH, (int)QSW, (int)QPH, (int)QPW, (int)POH, (int)POW
#define DC_THREADS (DC_R * DC_G * (DC_OCB / DC_OCT))
// AlexNet-style 11x11 stride-4 kernels (the catalog's convolutions); other shapes take the fallback.
// POH = 0: convolution (+ ReLU if RELU); POH > 0: convolution + ReLU + max-pool.
extern "C" __global__ void __launch_bounds__(DC_THREADS, DC_MINB) dconv_k11s4(DC_ARGS) {
    dc_body<11, 11, 4, 4>(DC_PASS);
}
// weights [OC][C*KH*KW] -> [C*KH*KW][OC], so a block's staging reads are contiguous
extern "C" __global__ void dc_transpose(const float* __restrict__ w, float* __restrict__ wt, i64 OC, i64 K) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < OC * K) wt[e] = w[(e % OC) * K + e / OC];
}
extern "C" __global__ void dc_zero(float* __restrict__ p, i64 count) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < count) p[e] = 0.0f;
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


def _dc_shared(p) -> int:
    """Bytes of shared memory one dconv_k11s4 block takes (its staging buffers, or the output tile)."""
    r, g, pt, ocb = p["dc_r"], p["dc_g"], p["dc_pt"], p["dc_ocb"]
    xn4 = ((pt - 1) * 4 + 11 + 3) // 4 * 4
    pitch = ((g - 1) * pt * 4 + xn4 + 3) // 4 * 4
    rows = (r - 1) * 4 + 11
    stage = (rows * pitch + p.get("dc_rpad", 0) * ((rows - 1) // 4 + 1) + 3) // 4 * 4 + 121 * ocb
    return 4 * max(stage * (2 if p.get("dc_db") else 1), ocb * r * g * pt)


def _cuda_reg_tiled(params):
    pool, fuse = params["relu"], params.get("dc_pool", 0)
    out = "conv_out" if pool else "y"
    fallback = _cuda_oc_blocked({"relu": pool, "ocb": 48, "pix": 256})
    threads = params["dc_r"] * params["dc_g"] * (params["dc_ocb"] // params["dc_oct"])
    width = params["dc_g"] * params["dc_pt"]
    grid = (f"(((oh + {params['dc_r'] - 1}) // {params['dc_r']}) * ((ow + {width - 1}) // {width}), "
            f"(cout + {params['dc_ocb'] - 1}) // {params['dc_ocb']}, nb)")
    shared = _dc_shared(params)
    args = "_ptr(x), _ptr(wt), _ptr(bias), _ptr({target}), *geometry, *{pool_args}"
    conv = f"_launch('dconv_k11s4', {grid}, ({threads},), " + args.format(target=out, pool_args="_DC_NOPOOL") + \
        f", shared={shared})" + (_POOL_LAUNCH if pool else "")
    if pool and fuse:
        conv = f"""
if ow <= {width}:
    _launch('dc_zero', ((y.numel() + 255) // 256,), (256,), _ptr(y), _n(y.numel()))
    _launch('dconv_k11s4', {grid}, ({threads},), {args.format(target='y', pool_args='pool_geometry')},
            _n(poh), _n(pow_), shared={shared})
else:
{textwrap.indent(conv.strip(), '    ')}"""
    launch = f"""
if (kh, kw, sh, sw, dh, dw) == (11, 11, 4, 4, 1, 1) and {shared} <= _SHARED_LIMIT:
    wt = torch.empty((cin * kh * kw * cout,), dtype=torch.float32, device=x.device)
    _launch('dc_transpose', ((wt.numel() + 255) // 256,), (256,), _ptr(weight), _ptr(wt), _n(cout), _n(cin * kh * kw))
{textwrap.indent(conv.strip(), '    ')}
else:
{textwrap.indent(textwrap.dedent(fallback.launch).strip(), '    ')}"""
    kernels = ("dconv_k11s4", "dc_transpose") + (("dc_zero",) if pool else ())
    setup = fallback.setup + "".join(f"_kernels['{k}'].max_dynamic_shared_size_bytes = _SHARED_LIMIT\n"
                                     for k in kernels if k.startswith("dconv"))
    setup += "_DC_NOPOOL = [cupy.int64(0)] * 8\n"
    source = "#define OCB 48\n#define PIX 256\n" + fallback.source + _CU_REG_TILED.replace("GEOMETRY", _GEOMETRY_C)
    return Parts(source, launch, kernels=fallback.kernels + kernels, setup=setup)


def _cuda_recipes(relu):
    tail = " ReLU is applied in the epilogue and a small kernel max-pools the result." if relu else ""
    return (
        Recipe("direct", "Direct convolution, one thread per output",
               "The straightforward kernel: each thread loops over input channels and the kernel window for one "
               "output value." + (" ReLU fused into the store, then a max-pool kernel." if relu else ""),
               ({"relu": relu},), _cuda_direct),
        _reg_tiled_recipe(relu),  # the starting kernel stays the plain one; ideas follow, fastest first
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


# (rows, column groups, pixels per thread, channels per thread, channels per block, min blocks per SM, double
# buffer, row padding), measured on the H200 on 2026-11-29 (docs/BENCHMARKS.md, "register-tiled direct convolution")
_DC_SHAPES = {
    "4x5": (5, 11, 5, 4, 32, 2, 0, 0),       # conv 0.590 ms; fused pool 0.703, separate pool 0.689
    "4x5_pad": (5, 11, 5, 4, 32, 2, 0, 12),  # conv 0.601 ms; fused pool 0.712
    "12x5": (5, 11, 5, 12, 48, 2, 0, 12),    # conv 0.676 ms; fused pool 0.813
    "4x7_db": (5, 8, 7, 4, 32, 2, 1, 0),     # conv 0.690 ms; fused pool 0.768
}
_DC_KEYS = ("dc_r", "dc_g", "dc_pt", "dc_oct", "dc_ocb", "dc_minb", "dc_db", "dc_rpad")


def _reg_tiled_recipe(relu):
    def variant(name, **extra):
        return {"relu": relu, **dict(zip(_DC_KEYS, _DC_SHAPES[name])), **extra}

    if relu:  # best first: ReLU in the conv epilogue + the pool kernel edged out the fused pool epilogue
        variants = (variant("4x5", dc_pool=0), variant("4x5", dc_pool=1), variant("4x5_pad", dc_pool=1),
                    variant("4x7_db", dc_pool=1), variant("12x5", dc_pool=1))
    else:
        variants = tuple(variant(name) for name in ("4x5", "4x5_pad", "12x5", "4x7_db"))
    return Recipe(
        "direct_register_tiled",
        "Direct convolution tiled in registers: input rows in shared memory, out-channels x pixels per thread",
        "For a large kernel window over few input channels (AlexNet's 11x11, stride 4, 3 channels), make the "
        "direct convolution FMA-bound. A block owns 5 output rows x 55 columns of one image and 32-48 output "
        "channels; per input channel it stages the input rows those pixels read (8-byte cp.async pairs, zero "
        "padding included) and the channel's weights, tap-major (16-byte cp.async). Each thread owns 4-12 output "
        "channels x 5-7 neighbouring pixels of a row: per kernel row it loads the 27-35 input values its pixels "
        "touch into registers (float4) and per tap one broadcast float4 of weights per 4 channels, so the inner "
        "loop is about 90% FMAs. Sums stay in strict fp32, in PyTorch's tap order. Full tiles are stored straight "
        "from registers." + (
            " ReLU runs in the epilogue. The first variant stores the activation and max-pools it with a small "
            "kernel; the others pool in the epilogue through shared memory (pool windows split across two blocks "
            "are merged with an integer atomicMax into an output zeroed first, exact since the values are >= 0), "
            "so the conv output never reaches global memory." if relu else ""),
        variants, _cuda_reg_tiled)


FAMILIES = (
    Family("conv2d", read_conv, forward_conv,
           {"cpu": _cpu_recipes(_cpu_conv, 0), "cuda": _cuda_recipes(0)}),
    Family("conv_relu_maxpool", read_conv_pool, forward_conv_pool,
           {"cpu": _cpu_recipes(_cpu_pool, 1), "cuda": _cuda_recipes(1)}),
)
