"""Layer normalization over the trailing dims: statistics in double (two-pass or chunked with
Chan's merge; never E[x^2] - mean^2), mean split into float hi + lo for the subtraction."""

import textwrap

from . import prelude
from .reading import ReadError, argument, calls, submodule
from .recipes import Family, Parts, Recipe, bind


def read(shape) -> dict:
    module = submodule(shape, {"LayerNorm"})
    if module:
        return {"input": shape.first_input, "normalized": f"{module}.normalized_shape",
                "weight": f"{module}.weight", "bias": f"{module}.bias", "eps": f"{module}.eps"}
    found = calls(shape.forward, {"layer_norm"})
    if not found:
        raise ReadError("could not find nn.LayerNorm or F.layer_norm in Model")
    call = found[0]
    data = argument(call, 0, "input")
    if data not in shape.forward_args:
        raise ReadError(f"the playbook's layernorm kernels take a forward argument directly, not {data!r}")
    return {"input": data, "normalized": argument(call, 1, "normalized_shape"),
            "weight": argument(call, 2, "weight", "None"), "bias": argument(call, 3, "bias", "None"),
            "eps": argument(call, 4, "eps", "1e-5")}


def forward(facts: dict, launch: str) -> str:
    return f"""
{bind('x', facts['input'])}if x.dtype != torch.float32:
    raise TypeError(f"this kernel is written for float32, got {{x.dtype}}")
normalized = {facts['normalized']}
normalized = (normalized,) if isinstance(normalized, int) else tuple(normalized)
n = 1
for size in normalized:
    n *= size
x = x.contiguous()
y = torch.empty_like(x)
rows = x.numel() // max(n, 1)
weight, bias = {facts['weight']}, {facts['bias']}
weight = weight.contiguous() if weight is not None else None
bias = bias.contiguous() if bias is not None else None
eps = float({facts['eps']})
if x.numel():
{textwrap.indent(launch, '    ')}
return y
"""


# -- CPU -----------------------------------------------------------------------------------

# MODE 0: plain two-pass loops. MODE 1: two-pass with SIMD double reductions.
# MODE 2: one read for the statistics: two passes inside each L1-sized chunk, chunks merged with
# Chan's parallel formula. All statistics in double.
_C = r'''
static void stats(const float* xr, i64 n, double* mean_out, double* var_out) {
#if MODE == 2
    double count = 0.0, mean = 0.0, m2 = 0.0;
    for (i64 start = 0; start < n; start += CHUNK) {
        i64 len = n - start < CHUNK ? n - start : CHUNK;
        const float* c = xr + start;
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (i64 i = 0; i < len; ++i) s += c[i];
        double cm = s / len;
        float hi = (float)cm, lo = (float)(cm - hi);
        double q = 0.0;
        #pragma omp simd reduction(+:q)
        for (i64 i = 0; i < len; ++i) { float d = (c[i] - hi) - lo; q += (double)d * d; }
        double total = count + len, delta = cm - mean;
        mean += delta * len / total;
        m2 += q + delta * delta * count * len / total;
        count = total;
    }
    *mean_out = mean;
    *var_out = m2 / n;
#else
    double s = 0.0;
#if MODE == 1
    #pragma omp simd reduction(+:s)
#endif
    for (i64 i = 0; i < n; ++i) s += xr[i];
    double mean = s / n, q = 0.0;
#if MODE == 1
    #pragma omp simd reduction(+:q)
#endif
    for (i64 i = 0; i < n; ++i) { double d = xr[i] - mean; q += d * d; }
    *mean_out = mean;
    *var_out = q / n;
#endif
}

void layernorm(const float* x, const float* w, const float* b, float* y, i64 rows, i64 n, float eps) {
#if PARALLEL
    #pragma omp parallel for schedule(static)
#endif
    for (i64 r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        double mean, var;
        stats(xr, n, &mean, &var);
        float rstd = (float)(1.0 / sqrt(var + (double)eps));
        float hi = (float)mean, lo = (float)(mean - hi);
        #pragma omp simd
        for (i64 i = 0; i < n; ++i) {
            float v = ((xr[i] - hi) - lo) * rstd;
            if (w) v *= w[i];
            if (b) v += b[i];
            yr[i] = v;
        }
    }
}
'''

# Explicit SIMD (prelude.C_SIMD). ONE_PASS=0: mean, then the mean of squared deviations from it,
# in double vectors (two sweeps over the row, which stays in L2). ONE_PASS=1: one sweep for the
# sums of d = x - x[0] and d^2 in double; shifting by a sample of the row keeps
# var = E[d^2] - E[d]^2 free of cancellation (exact differences at large offsets). ONE_PASS=2:
# the same sums in float vectors over chunks, merged in double.
_C_VEC = r'''
static inline vd vsplat_d(double a) { return (vd){0} + a; }

static void row_stats_v(const float* x, i64 n, double* mean_out, double* var_out) {
    const int H = VL / 2;
    i64 i = 0;
#if ONE_PASS == 2
    /* float vectors within chunks of 64 values per lane pair, widened and merged into double
       vectors per chunk: half the conversions of all-double sums, still no long float sums */
    float shift = x[0];
    vf sh = vsplat(shift);
    vd S = vsplat_d(0.0), Q = S;
    for (; i + 4 * VL <= n;) {
        vf s0 = vsplat(0.0f), s1 = s0, q0 = s0, q1 = s0;
        i64 end = n - i >= 64 * VL ? i + 64 * VL : i + (n - i) / (4 * VL) * (4 * VL);
        for (; i < end; i += 4 * VL) {
            vf d0 = vload(x + i) - sh, d1 = vload(x + i + VL) - sh;
            vf d2 = vload(x + i + 2 * VL) - sh, d3 = vload(x + i + 3 * VL) - sh;
            s0 += d0 + d2; s1 += d1 + d3;
            q0 += d0 * d0; q1 += d1 * d1; q0 += d2 * d2; q1 += d3 * d3;
        }
        float t[VL];
        vstore(t, s0 + s1); S += vload_d(t) + vload_d(t + H);
        vstore(t, q0 + q1); Q += vload_d(t) + vload_d(t + H);
    }
    double s = vsum_d(S), q = vsum_d(Q);
    for (; i < n; ++i) { double d = (double)x[i] - shift; s += d; q += d * d; }
    double md = s / n;
    *mean_out = shift + md;
    double var = q / n - md * md;
    *var_out = var > 0.0 ? var : 0.0;
#elif ONE_PASS
    double shift = x[0];
    vd sh = vsplat_d(shift), s0 = vsplat_d(0.0), s1 = s0, s2 = s0, s3 = s0, q0 = s0, q1 = s0, q2 = s0, q3 = s0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vd d0 = vload_d(x + i) - sh, d1 = vload_d(x + i + H) - sh;
        vd d2 = vload_d(x + i + 2 * H) - sh, d3 = vload_d(x + i + 3 * H) - sh;
        s0 += d0; s1 += d1; s2 += d2; s3 += d3;
        q0 += d0 * d0; q1 += d1 * d1; q2 += d2 * d2; q3 += d3 * d3;
    }
    for (; i + VL <= n; i += VL) {
        vd d0 = vload_d(x + i) - sh, d1 = vload_d(x + i + H) - sh;
        s0 += d0; s1 += d1;
        q0 += d0 * d0; q1 += d1 * d1;
    }
    double s = vsum_d((s0 + s1) + (s2 + s3)), q = vsum_d((q0 + q1) + (q2 + q3));
    for (; i < n; ++i) { double d = x[i] - shift; s += d; q += d * d; }
    double md = s / n;
    *mean_out = shift + md;
    double var = q / n - md * md;
    *var_out = var > 0.0 ? var : 0.0;
#else
    vd s0 = vsplat_d(0.0), s1 = s0;
    for (; i + VL <= n; i += VL) { s0 += vload_d(x + i); s1 += vload_d(x + i + H); }
    double s = vsum_d(s0 + s1);
    for (; i < n; ++i) s += x[i];
    double mean = s / n;
    vd m = vsplat_d(mean), q0 = vsplat_d(0.0), q1 = q0;
    for (i = 0; i + VL <= n; i += VL) {
        vd d0 = vload_d(x + i) - m, d1 = vload_d(x + i + H) - m;
        q0 += d0 * d0; q1 += d1 * d1;
    }
    double q = vsum_d(q0 + q1);
    for (; i < n; ++i) { double d = x[i] - mean; q += d * d; }
    *mean_out = mean;
    *var_out = q / n;
#endif
}

void layernorm(const float* x, const float* w, const float* b, float* y, i64 rows, i64 n, float eps) {
    for (i64 r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        double mean, var;
        row_stats_v(xr, n, &mean, &var);
        float rstd = (float)(1.0 / sqrt(var + (double)eps));
        float hi = (float)mean, lo = (float)(mean - hi);
        vf vh = vsplat(hi), vl = vsplat(lo), vr = vsplat(rstd);
        i64 i = 0;
        if (w && b) {
            for (; i + VL <= n; i += VL) {
#if PREFETCH
                /* the next row's statistics pass will want its start: fetch it while writing */
                if (r + 1 < rows) __builtin_prefetch(xr + n + i, 0, 3);
#endif
                vstore(yr + i, ((vload(xr + i) - vh) - vl) * vr * vload(w + i) + vload(b + i));
            }
        } else {
            for (; i + VL <= n; i += VL) {
                vf v = ((vload(xr + i) - vh) - vl) * vr;
                if (w) v *= vload(w + i);
                if (b) v += vload(b + i);
                vstore(yr + i, v);
            }
        }
        for (; i < n; ++i) {
            float v = ((xr[i] - hi) - lo) * rstd;
            if (w) v *= w[i];
            if (b) v += b[i];
            yr[i] = v;
        }
    }
}
'''

_CPU_LAUNCH = "_launch('layernorm', _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), _n(rows), _n(n), _f(eps))"


def _cpu(params):
    flags = ("-fopenmp",) if params["parallel"] else ("-fopenmp-simd",) if params["mode"] else ()
    return Parts(_C, _CPU_LAUNCH, flags=flags)


CPU = (
    Recipe("naive", "Naive loops: two passes for the statistics in double, then normalise",
           "The straightforward translation: per row, the mean as a double sum, then the variance as the mean "
           "of squared deviations from it (two-pass, stable for shifted data), then (x - mean) * rstd * w + b.",
           ({"mode": 0, "parallel": 0, "chunk": 0},), _cpu),
    Recipe("openmp_rows_simd", "OpenMP over rows with SIMD double reductions",
           "Rows are independent: split them across cores. Inside a row, let the compiler vectorise the double "
           "sums (`omp simd reduction`) and the output pass, which subtracts the mean as a float hi + lo pair so "
           "no precision is lost at large offsets.",
           ({"mode": 1, "parallel": 1, "chunk": 0}, {"mode": 1, "parallel": 0, "chunk": 0}), _cpu),
    Recipe("chunked_chan", "One read for the statistics: two-pass inside L1-sized chunks, merged with Chan's formula",
           "Long rows do not fit in cache, so a plain two-pass reads them twice from memory. Compute mean and "
           "squared deviations per chunk while it is in L1, then merge the chunks' (count, mean, M2) with Chan's "
           "parallel-variance formula in double: as stable as two-pass, one sweep over memory for the statistics.",
           ({"mode": 2, "parallel": 1, "chunk": 1024}, {"mode": 2, "parallel": 1, "chunk": 8192}), _cpu),
    Recipe("explicit_simd", "Explicit SIMD vectors: double-vector statistics, one fused normalise-scale-shift pass",
           "Write the vectors out (GCC vector types as wide as the host's registers: AVX-512, AVX2 or SSE at "
           "compile time) instead of hoping the double reductions auto-vectorise: floats widen to double vectors "
           "for the sums, and the output pass is one sweep of (x - mean_hi - mean_lo) * rstd * w + b. The row "
           "stays in L2. Variants: one pass over d = x - x[0] for the sum and the sum of squares (shifting by a "
           "sample of the row removes the cancellation of E[d^2] - E[d]^2 and makes the differences exact at "
           "large offsets), summed in float vectors over chunks of 1024 values and merged in double (without and "
           "with prefetching the next row while writing this one), or summed in double throughout; or "
           "two-pass statistics (mean, then squared deviations) in double.",
           ({"one_pass": 2, "prefetch": 0}, {"one_pass": 2, "prefetch": 1}, {"one_pass": 1, "prefetch": 0},
            {"one_pass": 0, "prefetch": 0}),
           lambda params: Parts(prelude.C_SIMD + _C_VEC, _CPU_LAUNCH)),
)

# -- CUDA ----------------------------------------------------------------------------------

_CU_ROW = r'''
extern "C" __global__ void ln_rows(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                   float* __restrict__ y, i64 rows, i64 n, float eps) {
    __shared__ double scratch[32];
    const float* xr = x + (i64)blockIdx.x * n;
    float* yr = y + (i64)blockIdx.x * n;
    double s = 0.0;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) s += xr[i];
    double mean = block_sum_d(s, scratch) / n;
    double q = 0.0;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) { double d = xr[i] - mean; q += d * d; }
    double var = block_sum_d(q, scratch) / n;
    float rstd = (float)(1.0 / sqrt(var + (double)eps));
    float hi = (float)mean, lo = (float)(mean - hi);
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
        float v = ((xr[i] - hi) - lo) * rstd;
        if (w) v *= w[i];
        if (b) v += b[i];
        yr[i] = v;
    }
}
'''

# Rows split into chunks of CH = THREADS * ITEMS values; block b handles chunk b / rows of row
# b % rows (neighbouring blocks share the weight chunk in L2). Each thread keeps its ITEMS values
# in registers for the in-chunk second pass.
_CU_CHUNKED = r'''
#define CH ((i64)THREADS * ITEMS)

template <int VW>
__device__ __forceinline__ void load_items(const float* __restrict__ p, i64 len, float* v) {
    #pragma unroll
    for (int k = 0; k < ITEMS / VW; ++k) {
        i64 i = ((i64)k * THREADS + threadIdx.x) * VW;
        if (VW == 4) {
            float4 f = i < len ? *reinterpret_cast<const float4*>(p + i) : make_float4(0.f, 0.f, 0.f, 0.f);
            v[4 * k] = f.x; v[4 * k + 1] = f.y; v[4 * k + 2] = f.z; v[4 * k + 3] = f.w;
        } else {
            v[k] = i < len ? p[i] : 0.0f;
        }
    }
}

template <int VW>
__device__ void chunk_stats(const float* __restrict__ x, double2* __restrict__ part, i64 rows, i64 n, i64 chunks) {
    __shared__ double scratch[32];
    i64 row = blockIdx.x % rows, chunk = blockIdx.x / rows;
    i64 start = chunk * CH, len = min(CH, n - start);
    float v[ITEMS];
    load_items<VW>(x + row * n + start, len, v);
    double s = 0.0;
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) s += v[k];
    double mean = block_sum_d(s, scratch) / len;
    float hi = (float)mean, lo = (float)(mean - hi);
    float q = 0.0f;
    #pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        i64 i = ((i64)(k / VW) * THREADS + threadIdx.x) * VW + (k % VW);
        float d = (v[k] - hi) - lo;
        q += i < len ? d * d : 0.0f;
    }
    double m2 = block_sum_d((double)q, scratch);
    if (threadIdx.x == 0) part[row * chunks + chunk] = make_double2(mean, m2);
}

extern "C" __global__ void ln_chunk_stats(const float* __restrict__ x, double2* __restrict__ part, i64 rows, i64 n,
                                          i64 chunks, int vec) {
    if (vec) chunk_stats<4>(x, part, rows, n, chunks); else chunk_stats<1>(x, part, rows, n, chunks);
}

// Chan's merge of the chunks of one row (block per row), in double: (mean, rstd) per row.
extern "C" __global__ void ln_merge(const double2* __restrict__ part, double2* __restrict__ stat, i64 n, i64 chunks,
                                    float eps) {
    __shared__ double scratch[32];
    const double2* p = part + (i64)blockIdx.x * chunks;
    double s = 0.0;
    for (i64 c = threadIdx.x; c < chunks; c += blockDim.x) s += (double)min(CH, n - c * CH) * p[c].x;
    double mean = block_sum_d(s, scratch) / n;
    double m2 = 0.0;
    for (i64 c = threadIdx.x; c < chunks; c += blockDim.x) {
        double d = p[c].x - mean;
        m2 += p[c].y + (double)min(CH, n - c * CH) * d * d;
    }
    m2 = block_sum_d(m2, scratch);
    if (threadIdx.x == 0) stat[blockIdx.x] = make_double2(mean, 1.0 / sqrt(m2 / n + (double)eps));
}

template <int VW>
__device__ void normalize(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                          const double2* __restrict__ stat, float* __restrict__ y, i64 rows, i64 n) {
    i64 block = REVERSE ? (i64)gridDim.x - 1 - blockIdx.x : blockIdx.x;
    i64 row = block % rows, chunk = block / rows;
    i64 start = chunk * CH, len = min(CH, n - start);
    double2 st = stat[row];
    float hi = (float)st.x, lo = (float)(st.x - hi), rstd = (float)st.y;
    const float* xc = x + row * n + start;
    float* yc = y + row * n + start;
    #pragma unroll
    for (int k = 0; k < ITEMS / VW; ++k) {
        i64 i = ((i64)k * THREADS + threadIdx.x) * VW;
        if (i >= len) break;
        if (VW == 4) {
            float4 v = __ldcs(reinterpret_cast<const float4*>(xc + i));
            float4 g = w ? *reinterpret_cast<const float4*>(w + start + i) : make_float4(1.f, 1.f, 1.f, 1.f);
            float4 h = b ? *reinterpret_cast<const float4*>(b + start + i) : make_float4(0.f, 0.f, 0.f, 0.f);
            float4 o;
            o.x = ((v.x - hi) - lo) * rstd * g.x + h.x;
            o.y = ((v.y - hi) - lo) * rstd * g.y + h.y;
            o.z = ((v.z - hi) - lo) * rstd * g.z + h.z;
            o.w = ((v.w - hi) - lo) * rstd * g.w + h.w;
            __stcs(reinterpret_cast<float4*>(yc + i), o);
        } else {
            float o = ((xc[i] - hi) - lo) * rstd;
            if (w) o *= w[start + i];
            if (b) o += b[start + i];
            yc[i] = o;
        }
    }
}

extern "C" __global__ void ln_normalize(const float* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ b, const double2* __restrict__ stat,
                                        float* __restrict__ y, i64 rows, i64 n, int vec) {
    if (vec) normalize<4>(x, w, b, stat, y, rows, n); else normalize<1>(x, w, b, stat, y, rows, n);
}
'''

_CU_CHUNKED_LAUNCH = '''
chunk = {threads} * {items}
chunks = (n + chunk - 1) // chunk
aligned = [t.data_ptr() % 16 == 0 for t in (x, y, weight, bias) if t is not None]
vec = cupy.int32({vec} and n % 4 == 0 and all(aligned))
part = torch.empty(rows * chunks * 2, dtype=torch.float64, device=x.device)
stat = torch.empty(rows * 2, dtype=torch.float64, device=x.device)
_launch('ln_chunk_stats', (rows * chunks,), ({threads},), _ptr(x), _ptr(part), _n(rows), _n(n), _n(chunks), vec)
_launch('ln_merge', (rows,), (256,), _ptr(part), _ptr(stat), _n(n), _n(chunks), _f(eps))
_launch('ln_normalize', (rows * chunks,), ({threads},), _ptr(x), _ptr(weight), _ptr(bias), _ptr(stat), _ptr(y),
        _n(rows), _n(n), vec)
'''


def _cuda_row(params):
    launch = (f"_launch('ln_rows', (rows,), ({params['block']},), _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), "
              "_n(rows), _n(n), _f(eps))")
    return Parts(_CU_ROW, launch, kernels=("ln_rows",))


def _cuda_chunked(params):
    launch = _CU_CHUNKED_LAUNCH.format(**params)
    return Parts(_CU_CHUNKED, launch, kernels=("ln_chunk_stats", "ln_merge", "ln_normalize"))


def _c(threads, items, vec=1, reverse=0):
    return {"threads": threads, "items": items, "vec": vec, "reverse": reverse}


CUDA = (
    Recipe("block_per_row", "One block per row, two-pass statistics in double, then normalise",
           "The straightforward kernel: a block per row sums the row in double for the mean, then the squared "
           "deviations for the variance, then writes the normalised row. Three reads of x; with few, long rows "
           "most of the GPU idles.",
           ({"block": 1024}, {"block": 512}), _cuda_row),
    Recipe("split_rows_float4", "Split each row across many blocks: chunk statistics in registers, Chan merge, "
           "float4 normalise",
           "Few long rows leave most SMs idle with a block per row. Cut every row into chunks of THREADS x ITEMS "
           "values, one block each: the chunk stays in registers for an exact two-pass mean and M2, a tiny kernel "
           "merges the chunks per row with Chan's formula in double, and a third kernel normalises with 128-bit "
           "loads and streaming stores. x is read twice from HBM, never three times.",
           (_c(256, 32), _c(256, 16), _c(512, 16), _c(1024, 8)), _cuda_chunked),
    Recipe("l2_reverse_order", "Normalise in reverse block order so the last chunks read are still in L2",
           "The statistics pass ends with the last chunks of x in L2 (tens of MB); running the normalise pass's "
           "blocks in reverse order re-reads those first, from cache, before they are evicted.",
           (_c(256, 16, reverse=1), _c(512, 16, reverse=1)), _cuda_chunked),
    Recipe("split_rows_scalar", "Split rows across blocks with scalar loads",
           "The chunked statistics and Chan merge with 32-bit loads: for rows whose length or alignment rules out "
           "float4.",
           (_c(256, 16, vec=0), _c(512, 8, vec=0)), _cuda_chunked),
)

FAMILIES = (Family("layernorm", read, forward, {"cpu": CPU, "cuda": CUDA}),)
