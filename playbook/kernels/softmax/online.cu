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

// Hopper thread-block clusters: a block's rank, a release/acquire barrier over the whole cluster,
// and loads/stores of another block's shared memory (distributed shared memory).
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}
__device__ __forceinline__ void cluster_barrier() {  // release, then acquire, across the cluster
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
__device__ __forceinline__ float2 cluster_load(const float2* local, unsigned rank) {
    unsigned address = (unsigned)__cvta_generic_to_shared(local), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(address), "r"(rank));
    float2 v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(remote) : "memory");
    return v;
}
__device__ __forceinline__ void cluster_store(int* local, unsigned rank, int value) {
    unsigned address = (unsigned)__cvta_generic_to_shared(local), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(address), "r"(rank));
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(remote), "r"(value) : "memory");
}

#if CLUSTER
// A row split over a cluster of CLUSTER blocks (Hopper's thread-block clusters): each block keeps its
// slice in registers (PER float4 a thread), the blocks' (max, sum) pairs merge through distributed
// shared memory, and the row is written from the registers: one read and one write of HBM, where the
// kernels above read the row twice.
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK, MIN_BLOCKS)
softmax_cluster(const float* __restrict__ x, float* __restrict__ y, i64 rows, i64 cols) {
    __shared__ float sm[32], ss[32];
    __shared__ float2 stat;
    const unsigned rank = cluster_rank();
    const i64 row = blockIdx.x / CLUSTER;
    const i64 n4 = (cols >> 2) / CLUSTER;  // this block's float4 of the row
    const float4* x4 = reinterpret_cast<const float4*>(x + row * cols) + rank * n4;
    float4* y4 = reinterpret_cast<float4*>(y + row * cols) + rank * n4;
    float4 v[PER];
    float m = NEG_INF, s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const i64 i = threadIdx.x + (i64)k * BLOCK;
        if (i < n4) {
            v[k] = __ldcs(x4 + i);  // read once: nothing of it is wanted in L2 afterwards
            online_add4(m, s, v[k]);
        }
    }
    warp_online(m, s);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < BLOCK / 32 ? sm[lane] : NEG_INF;
        s = lane < BLOCK / 32 ? ss[lane] : 0.0f;
        warp_online(m, s);
        if (lane == 0) stat = make_float2(m, s);
    }
    cluster_barrier();  // every block's pair is written
    if (warp == 0) {
        float2 theirs = lane < CLUSTER ? cluster_load(&stat, lane) : make_float2(NEG_INF, 0.0f);
        m = theirs.x;
        s = theirs.y;
        warp_online(m, s);
        if (lane == 0) { sm[0] = m; ss[0] = s; }
    }
    cluster_barrier();  // every remote read is done (a block may exit after this), and sm[0] is seen
    m = sm[0];
    const float inv = 1.0f / ss[0];
#pragma unroll
    for (int k = 0; k < PER; ++k) {
        const i64 i = threadIdx.x + (i64)k * BLOCK;
        if (i < n4) __stcs(y4 + i, exp4(v[k], m, inv));
    }
}
#endif
