"""Softmax over one dimension: rows are the softmax dimension moved last and made contiguous."""

import textwrap

from . import prelude
from .reading import ReadError, argument, calls, submodule
from .recipes import Family, Parts, Recipe, bind


def read(shape) -> dict:
    found = calls(shape.forward, {"softmax"})
    if found:
        call = found[0]
        data, dim = argument(call, 0, "input"), argument(call, 1, "dim")
    else:
        module = submodule(shape, {"Softmax"})
        if module is None:
            raise ReadError("could not find softmax (torch.softmax, F.softmax, x.softmax or nn.Softmax) in Model")
        data, dim = shape.first_input, f"{module}.dim"
    if data not in shape.forward_args:
        raise ReadError(f"the playbook's softmax kernels take a forward argument directly, not {data!r}")
    if dim is None or dim == "None":
        raise ReadError("softmax without an explicit dim is not supported by the playbook")
    return {"input": data, "dim": dim}


def forward(facts: dict, launch: str) -> str:
    return f"""
{bind('x', facts['input'])}if x.dtype != torch.float32:
    raise TypeError(f"this kernel is written for float32, got {{x.dtype}}")
dim = ({facts['dim']}) % x.dim()
last = dim == x.dim() - 1
x = (x if last else x.transpose(dim, -1)).contiguous()
y = torch.empty_like(x)
cols = x.shape[-1]
rows = x.numel() // max(cols, 1)
if x.numel():
{textwrap.indent(launch, '    ')}
return y if last else y.transpose(dim, -1)
"""


# -- CPU -----------------------------------------------------------------------------------

_C_NAIVE = r'''
void softmax(const float* x, float* y, i64 rows, i64 cols) {
    for (i64 r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = -INFINITY;
        for (i64 c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (i64 c = 0; c < cols; ++c) s += expf(xr[c] - m);
        float inv = (float)(1.0 / s);
        for (i64 c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) * inv;
    }
}
'''

# Vectorisable passes: max and sum as SIMD reductions, exp as an inline polynomial.
# ONLINE=1 finds max and sum in one sweep, block by block, rescaling the running sum.
_C_FAST = r'''
static float row_max(const float* xr, i64 cols) {
    float m = -INFINITY;
    #pragma omp simd reduction(max:m)
    for (i64 c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    return m;
}

static float exp_sum(const float* xr, float* yr, i64 cols, float m) {
    float s = 0.0f;
    #pragma omp simd reduction(+:s)
    for (i64 c = 0; c < cols; ++c) {
        float e = exp_neg(xr[c] - m);
#if STORE_EXP
        yr[c] = e;
#endif
        s += e;
    }
    return s;
}

static void row_softmax(const float* xr, float* yr, i64 cols) {
    float m, s;
#if ONLINE
    m = -INFINITY; s = 0.0f;
    for (i64 start = 0; start < cols; start += CHUNK) {
        i64 len = cols - start < CHUNK ? cols - start : CHUNK;
        float mb = row_max(xr + start, len);
        if (mb == -INFINITY) continue;
        if (mb > m) { s *= exp_neg(m - mb); m = mb; }
        s += exp_sum(xr + start, yr + start, len, m);
    }
#else
    m = row_max(xr, cols);
    s = exp_sum(xr, yr, cols, m);
#endif
    float inv = 1.0f / s;
#if STORE_EXP && !ONLINE
    #pragma omp simd
    for (i64 c = 0; c < cols; ++c) yr[c] *= inv;
#else
    #pragma omp simd
    for (i64 c = 0; c < cols; ++c) yr[c] = exp_neg(xr[c] - m) * inv;
#endif
}

void softmax(const float* x, float* y, i64 rows, i64 cols) {
#if PARALLEL
    #pragma omp parallel for schedule(static)
#endif
    for (i64 r = 0; r < rows; ++r) row_softmax(x + r * cols, y + r * cols, cols);
}
'''

# Explicit SIMD (prelude.C_SIMD): three passes over a row that stays in L1/L2 (max; exp(x - max)
# stored and summed; scale), UNROLL independent vector accumulators per pass to hide latency.
# The last cols % VL values go through the same vector code on a padded copy.
_C_VEC = r'''
static float row_max_v(const float* x, i64 n) {
    vf m[UNROLL];
    for (int u = 0; u < UNROLL; ++u) m[u] = vsplat(-INFINITY);
    i64 i = 0;
    for (; i + UNROLL * VL <= n; i += UNROLL * VL)
        for (int u = 0; u < UNROLL; ++u) m[u] = vmax(m[u], vload(x + i + u * VL));
    for (; i + VL <= n; i += VL) m[0] = vmax(m[0], vload(x + i));
    for (int u = 1; u < UNROLL; ++u) m[0] = vmax(m[0], m[u]);
    float r = vmaxall(m[0]);
    for (; i < n; ++i) r = x[i] > r ? x[i] : r;
    return r;
}

static float row_exp_sum_v(const float* x, float* y, i64 n, float mx) {
    vf s[UNROLL], m = vsplat(mx);
    for (int u = 0; u < UNROLL; ++u) s[u] = vsplat(0.0f);
    i64 i = 0;
    for (; i + UNROLL * VL <= n; i += UNROLL * VL)
        for (int u = 0; u < UNROLL; ++u) {
            vf e = vexp_neg(vload(x + i + u * VL) - m);
            vstore(y + i + u * VL, e);
            s[u] += e;
        }
    for (; i + VL <= n; i += VL) {
        vf e = vexp_neg(vload(x + i) - m);
        vstore(y + i, e);
        s[0] += e;
    }
    for (int u = 1; u < UNROLL; ++u) s[0] += s[u];
    float total = vsum(s[0]);
    if (i < n) {
        float pad[VL];
        for (int l = 0; l < VL; ++l) pad[l] = i + l < n ? x[i + l] : mx;
        vf e = vexp_neg(vload(pad) - m);
        for (int l = 0; i + l < n; ++l) { y[i + l] = e[l]; total += e[l]; }
    }
    return total;
}

static void row_scale_v(const float* e, float* y, i64 n, float a) {
    vf v = vsplat(a);
    i64 i = 0;
#if STREAM && defined(__AVX512F__)
    for (; i < n && ((uintptr_t)(y + i) & 63); ++i) y[i] = e[i] * a;
    for (; i + VL <= n; i += VL) _mm512_stream_ps(y + i, (__m512)(vload(e + i) * v));
#endif
    for (; i + VL <= n; i += VL) vstore(y + i, vload(e + i) * v);
    for (; i < n; ++i) y[i] = e[i] * a;
}

void softmax(const float* x, float* y, i64 rows, i64 cols) {
#if STREAM
    /* STREAM: the exponentials go to an L1-resident scratch row, and the output is written once
       with non-temporal stores, so its cache lines are never read in from memory first. */
    static __thread float scratch[STREAM];
    float* e = cols <= STREAM ? scratch : 0;
#endif
    for (i64 r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
#if STREAM
        float* er = e ? e : yr;
#else
        float* er = yr;
#endif
        float mx = row_max_v(xr, cols);
        float s = row_exp_sum_v(xr, er, cols, mx);
        row_scale_v(er, yr, cols, 1.0f / s);
    }
#if STREAM && defined(__AVX512F__)
    _mm_sfence();
#endif
}
'''

_CPU_LAUNCH = "_launch('softmax', _ptr(x), _ptr(y), _n(rows), _n(cols))"


def _cpu(source: str, flags=("-fopenmp-simd",)):
    return lambda params: Parts(source, _CPU_LAUNCH, flags=("-fopenmp",) if params.get("parallel") else flags)


CPU = (
    Recipe("naive", "Naive loops: three passes per row (max, sum of exponentials, write)",
           "The straightforward translation: for each row find the maximum, sum exp(x - max) in double, then "
           "write exp(x - max) / sum. Scalar libm expf, one thread.",
           ({},), _cpu(_C_NAIVE, ())),
    Recipe("openmp_rows", "OpenMP over rows with SIMD passes and a vectorisable polynomial exp",
           "Rows are independent, so split them across cores with `#pragma omp parallel for`; inside a row the "
           "max and the sum are SIMD reductions and exp is an inline Cody-Waite polynomial (about 2 ulp) that the "
           "compiler vectorises, unlike libm's expf. Variants store the exponentials and rescale them, or "
           "recompute them.",
           ({"parallel": 1, "store_exp": 1, "online": 0, "chunk": 0},
            {"parallel": 1, "store_exp": 0, "online": 0, "chunk": 0}), _cpu(_C_FAST)),
    Recipe("simd_passes", "Vectorised passes with -O3 auto-vectorisation and an inline polynomial exp",
           "Keep one thread but make every pass vectorise: SIMD reductions for the max and the sum (allowed "
           "by `#pragma omp simd reduction`, which licenses the reordering) and a branch-free polynomial exp. "
           "Variants store the exponentials in the output during the sum pass, or recompute them while writing.",
           ({"parallel": 0, "store_exp": 1, "online": 0, "chunk": 0},
            {"parallel": 0, "store_exp": 0, "online": 0, "chunk": 0}), _cpu(_C_FAST)),
    Recipe("online", "Single-pass online softmax: max and sum together, block by block",
           "Read each row once for its statistics: per block of CHUNK values take the block max, rescale the "
           "running sum by exp(old max - new max) when the max grows, and add the block's exponentials, which "
           "are also stored; then one rescaling pass. Saves a full read of the row when rows exceed the cache.",
           ({"parallel": 1, "store_exp": 1, "online": 1, "chunk": 256},
            {"parallel": 1, "store_exp": 1, "online": 1, "chunk": 2048}), _cpu(_C_FAST)),
    Recipe("explicit_simd", "Explicit SIMD vectors: three in-cache passes with a vector polynomial exp",
           "Auto-vectorisation of the polynomial exp is fragile (the compiler may keep a scalar path hot), so "
           "write the vectors out: GCC vector types as wide as the host's registers (AVX-512, AVX2 or SSE, "
           "chosen at compile time), exp by range reduction to 2^k * p(r) with k rounded by the 1.5 * 2^23 trick "
           "and 2^k built in the exponent bits. A 16 KB row stays in L1 across its three passes (max, store and "
           "sum the exponentials, scale). Variants keep two or four independent accumulators per pass; a third "
           "puts the exponentials in a scratch row and writes the output with non-temporal stores.",
           ({"unroll": 2, "stream": 0}, {"unroll": 4, "stream": 0}, {"unroll": 2, "stream": 8192}),
           lambda params: Parts(prelude.C_SIMD + _C_VEC, _CPU_LAUNCH)),
)

# -- CUDA ----------------------------------------------------------------------------------

_CU_THREE_PASS = r'''
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, i64 rows, i64 cols) {
    __shared__ float scratch[32];
    const float* xr = x + (i64)blockIdx.x * cols;
    float* yr = y + (i64)blockIdx.x * cols;
    float m = NEG_INF;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
    s = block_sum(s, scratch);
    float inv = 1.0f / s;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) * inv;
}
'''

# Online statistics (running max m and sum s of exp(x - m)), merged across threads.
# WARP_ROWS=1: a warp owns a row; else the block does. STAGE floats of the row are kept in
# shared memory for the write pass; STREAM marks the output (and the last read) as streaming.
_CU_ONLINE = r'''
__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2) {
    float mx = fmaxf(m, m2);
    if (mx == NEG_INF) return;
    s = (m == NEG_INF ? 0.0f : s * expf(m - mx)) + (m2 == NEG_INF ? 0.0f : s2 * expf(m2 - mx));
    m = mx;
}
__device__ __forceinline__ void online_add4(float& m, float& s, float4 v) {
    float mb = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (mb == NEG_INF) { if (v.x != v.x || v.y != v.y || v.z != v.z || v.w != v.w) s = v.x + v.y + v.z + v.w; return; }
    float sb = expf(v.x - mb) + expf(v.y - mb) + expf(v.z - mb) + expf(v.w - mb);
    online_merge(m, s, mb, sb);
}
__device__ __forceinline__ void online_add(float& m, float& s, float v) {
    if (v > m) { s = s * expf(m - v) + 1.0f; m = v; }
    else if (v != NEG_INF) { s += expf(v - m); }
}
__device__ __forceinline__ void warp_online(float& m, float& s) {
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        online_merge(m, s, m2, s2);
    }
}
__device__ __forceinline__ float4 exp4(float4 v, float m, float inv) {
    return make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv, expf(v.w - m) * inv);
}

extern "C" __global__ void softmax_online(const float* __restrict__ x, float* __restrict__ y, i64 rows, i64 cols, int vec) {
#if WARP_ROWS
    i64 row = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const int lane = threadIdx.x & 31, step = 32;
#else
    __shared__ float sm[32], ss[32];
    i64 row = blockIdx.x;
    const int lane = threadIdx.x, step = blockDim.x;
#endif
#if STAGE
    extern __shared__ float4 stage[];
#endif
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float m = NEG_INF, s = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        i64 n4 = cols >> 2;
        for (i64 i = lane; i < n4; i += step) {
            float4 v = x4[i];
#if STAGE
            if (i < STAGE / 4) stage[i] = v;
#endif
            online_add4(m, s, v);
        }
    } else {
        for (i64 c = lane; c < cols; c += step) online_add(m, s, xr[c]);
    }
    warp_online(m, s);
#if !WARP_ROWS
    int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if ((threadIdx.x & 31) == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    m = (threadIdx.x & 31) < warps ? sm[threadIdx.x & 31] : NEG_INF;
    s = (threadIdx.x & 31) < warps ? ss[threadIdx.x & 31] : 0.0f;
    warp_online(m, s);
#endif
    float inv = 1.0f / s;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        i64 n4 = cols >> 2;
#if REVERSE
        // walk back from the row's end: the most recently read values are still in L2
        for (i64 i = lane + ((n4 - 1 - lane) / step) * step; lane < n4 && i >= 0; i -= step) {
#else
        for (i64 i = lane; i < n4; i += step) {
#endif
#if STAGE
            float4 v = i < STAGE / 4 ? stage[i] : x4[i];
#elif STREAM
            float4 v = __ldcs(x4 + i);
#else
            float4 v = x4[i];
#endif
#if STREAM
            __stcs(y4 + i, exp4(v, m, inv));
#else
            y4[i] = exp4(v, m, inv);
#endif
        }
    } else {
        for (i64 c = lane; c < cols; c += step) yr[c] = expf(xr[c] - m) * inv;
    }
}
'''


def _cuda_three_pass(params):
    launch = "_launch('softmax_rows', (rows,), (BLOCK,), _ptr(x), _ptr(y), _n(rows), _n(cols))"
    return Parts(_CU_THREE_PASS, launch.replace("BLOCK", str(params["block"])), kernels=("softmax_rows",))


def _cuda_online(params):
    block, warp_rows, stage = params["block"], params["warp_rows"], params["stage"]
    grid = f"(rows + {block // 32 - 1}) // {block // 32}" if warp_rows else "rows"
    vec = "int(cols % 4 == 0 and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0)"
    if not params["vec"]:
        vec = "0"
    launch = (f"_launch('softmax_online', ({grid},), ({block},), _ptr(x), _ptr(y), _n(rows), _n(cols), "
              f"cupy.int32({vec}), shared={stage * 4})")
    # shared memory beyond 48 KB per block must be opted into, once per kernel
    setup = ("_kernels['softmax_online'].max_dynamic_shared_size_bytes = "
             f"{stage * 4}\n" if stage * 4 > 48 * 1024 else "")
    return Parts(_CU_ONLINE, launch, kernels=("softmax_online",), setup=setup)


def _v(block, warp_rows=0, stage=0, stream=0, vec=1, reverse=0):
    return {"block": block, "warp_rows": warp_rows, "stage": stage, "stream": stream, "vec": vec, "reverse": reverse}


CUDA = (
    Recipe("block_three_pass", "One block per row, three passes with shared-memory tree reductions",
           "The straightforward kernel: a block per row; threads stride over the row for the maximum, reduce it "
           "through shared memory, then the sum of exp(x - max), then write the normalised values. Reads each "
           "row three times.",
           ({"block": 256}, {"block": 512}, {"block": 1024}), _cuda_three_pass),
    Recipe("reverse_write_pass", "Walk the write pass backwards so the re-read of the row comes from L2",
           "After the statistics pass, the end of each row is what was read last and is still in L2, while its "
           "start has likely been evicted by the other rows in flight. Writing the row from its end backwards "
           "turns part of the second read of x into L2 hits, closing in on one read and one write of HBM.",
           (_v(1024, stream=1, reverse=1), _v(512, stream=1, reverse=1), _v(1024, stage=32768, stream=1, reverse=1)),
           _cuda_online),
    Recipe("online_float4", "Online softmax with float4 vectorized loads and stores",
           "One pass computes the running max and the sum of exponentials together (rescaling the sum when the max "
           "grows), merged across lanes with warp shuffles and across warps through shared memory; the second "
           "pass writes. Loads and stores are 128-bit (float4) when the row allows it, and the streaming variants "
           "mark the output evict-first so the re-read of x stays in L2.",
           (_v(1024, stream=1), _v(512, stream=1), _v(1024), _v(256)), _cuda_online),
    Recipe("stage_in_shared", "Keep the row's head in shared memory so the write pass re-reads only the tail",
           "Reading a row twice from HBM costs a third of the traffic. While computing the statistics, the block "
           "also keeps the first STAGE values of its row in (opt-in, up to ~200 KB) shared memory, and the write "
           "pass takes them from there; only the rest is re-read, mostly from L2.",
           (_v(1024, stage=49152, stream=1), _v(1024, stage=32768, stream=1), _v(512, stage=16384, stream=1)),
           _cuda_online),
    Recipe("warp_per_row", "One warp per row with shuffle reductions",
           "Give each row to a single warp: statistics merge with __shfl_xor_sync only, with no shared memory and "
           "no __syncthreads, and several rows share a block. Best when rows are short or many.",
           (_v(256, warp_rows=1), _v(128, warp_rows=1)), _cuda_online),
    Recipe("online_scalar", "Online softmax with scalar loads",
           "The single-pass statistics of online softmax without vector loads, for rows whose length or alignment "
           "rules out float4.",
           (_v(512, vec=0), _v(1024, vec=0)), _cuda_online),
)

FAMILIES = (Family("softmax", read, forward, {"cpu": CPU, "cuda": CUDA}),)
