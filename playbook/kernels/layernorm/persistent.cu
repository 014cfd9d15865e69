// One read and one write of HBM for rows too long for one block. A persistent grid of G blocks walks
// the rows together: block g owns columns [g * chunk, (g + 1) * chunk) of every row, holds its part
// of the current row in registers (PER float4 a thread), reduces it to the chunk's (mean, M2), and
// meets the other blocks at a grid-wide barrier; after it every block merges the G pairs with Chan's
// formula in double and writes its part of the row from registers. The next row's part is loaded
// into shared memory (cp.async, each thread copying and later reading only its own float4s) as soon
// as this row's is in registers, so HBM stays busy through the barrier.
// Every block must be resident at once (the launch asks for at most OCCUPANCY blocks per SM).
// sync[0] counts arrivals over the whole launch (row r's barrier waits for G * (r + 1)); sync[1]
// counts the blocks that are done, and the last one zeroes both for the next launch on the stream.
// The pairs are kept by row parity: a block can be one barrier ahead of another's merge, not two.
// STREAM: x's lines marked evict-first in L2 (as y's streaming stores are), so the 2 x n floats of weight
// and bias that every row reads again stay in L2 while x streams past them.
__device__ __forceinline__ void cp_async16(float4* shared, const float4* global, unsigned long long policy) {
    unsigned address = (unsigned)__cvta_generic_to_shared(shared);
#if STREAM
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;"
                 :: "r"(address), "l"(global), "l"(policy) : "memory");
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(address), "l"(global) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Chan's merge of (count, mean, M2) b into a.
__device__ __forceinline__ void chan(double& na, double& ma, double& qa, double nb, double mb, double qb) {
    double n = na + nb;
    if (nb == 0.0 || n == 0.0) return;
    double d = mb - ma;
    ma += d * (nb / n);
    qa += qb + d * d * (na * nb / n);
    na = n;
}

extern "C" __global__ void __launch_bounds__(THREADS, OCCUPANCY)
ln_persistent(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
              float* __restrict__ y, double2* __restrict__ part, unsigned* __restrict__ sync, i64 rows, i64 n,
              i64 chunk, float eps) {
    extern __shared__ float4 slice[];  // THREADS x PER float4, thread t's k-th at k * THREADS + t
    __shared__ double scratch[32];
    __shared__ float stat[3];
    const int t = threadIdx.x, lane = t & 31;
    const unsigned G = gridDim.x;
    const i64 start = (i64)blockIdx.x * chunk;
    const i64 len = min(chunk, n - start);  // > 0: the launch leaves no empty block
    const int len4 = (int)(len >> 2);

    unsigned long long policy = 0;
#if STREAM
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
    auto issue = [&](i64 row) {
        const float4* from = reinterpret_cast<const float4*>(x + row * n + start);
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const int i = k * THREADS + t;
            if (i < len4) cp_async16(slice + i, from + i, policy);
        }
        cp_async_commit();
    };

    issue(0);
    for (i64 row = 0; row < rows; ++row) {
        cp_async_wait_all();
        float4 v[PER];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const int i = k * THREADS + t;
            v[k] = i < len4 ? slice[i] : make_float4(0.f, 0.f, 0.f, 0.f);
            s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        }
        if (row + 1 < rows) issue(row + 1);  // its own slots only: no block-wide wait before the refill

        // the chunk's mean, then its squared deviations from it (exact two-pass, in registers)
        const double mean = block_sum_d((double)s, scratch) / (double)len;
        const float hi = (float)mean, lo = (float)(mean - hi);
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            if (k * THREADS + t < len4) {
                float a = (v[k].x - hi) - lo, c = (v[k].y - hi) - lo, d = (v[k].z - hi) - lo, e = (v[k].w - hi) - lo;
                q += (a * a + c * c) + (d * d + e * e);
            }
        }
        const double m2 = block_sum_d((double)q, scratch);

        double2* pairs = part + (row & 1) * G;
        if (t == 0) {
            __stcg(pairs + blockIdx.x, make_double2(mean, m2));
            __threadfence();
            atomicAdd(sync, 1u);
            const unsigned target = G * (unsigned)(row + 1);
            while (load_acquire(sync) < target) __nanosleep(32);
        }
        __syncthreads();

        if (t < 32) {  // the first warp merges the G pairs
            double na = 0.0, ma = 0.0, qa = 0.0;
            for (unsigned g = lane; g < G; g += 32) {
                const double2 p = __ldcg(pairs + g);
                chan(na, ma, qa, (double)min(chunk, n - (i64)g * chunk), p.x, p.y);
            }
            for (int o = 16; o > 0; o >>= 1) {
                const double nb = __shfl_xor_sync(0xffffffffu, na, o);
                const double mb = __shfl_xor_sync(0xffffffffu, ma, o);
                const double qb = __shfl_xor_sync(0xffffffffu, qa, o);
                chan(na, ma, qa, nb, mb, qb);
            }
            if (lane == 0) {
                const float h = (float)ma;
                stat[0] = h;
                stat[1] = (float)(ma - h);
                stat[2] = (float)(1.0 / sqrt(qa / (double)n + (double)eps));
            }
        }
        __syncthreads();
        const float mh = stat[0], ml = stat[1], rstd = stat[2];
        float* yr = y + row * n + start;
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const int i = k * THREADS + t;
            if (i < len4) {
                const float4 g = w ? __ldg(reinterpret_cast<const float4*>(w + start) + i) : make_float4(1.f, 1.f, 1.f, 1.f);
                const float4 h = b ? __ldg(reinterpret_cast<const float4*>(b + start) + i) : make_float4(0.f, 0.f, 0.f, 0.f);
                float4 o;
                o.x = ((v[k].x - mh) - ml) * rstd * g.x + h.x;
                o.y = ((v[k].y - mh) - ml) * rstd * g.y + h.y;
                o.z = ((v[k].z - mh) - ml) * rstd * g.z + h.z;
                o.w = ((v[k].w - mh) - ml) * rstd * g.w + h.w;
                __stcs(reinterpret_cast<float4*>(yr) + i, o);
            }
        }
    }
    if (t == 0) {
        __threadfence();
        if (atomicAdd(sync + 1, 1u) == G - 1) {  // every block is past its last barrier
            sync[0] = 0;
            sync[1] = 0;
            __threadfence();
        }
    }
}

extern "C" __global__ void ln_sync_reset(unsigned* sync) { sync[0] = 0; sync[1] = 0; }
