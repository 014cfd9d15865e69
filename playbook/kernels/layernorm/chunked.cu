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
