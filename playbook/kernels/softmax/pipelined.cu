// One read and one write of HBM, with the loads of the next rows in flight while a row is reduced
// and written. A cluster of CTAS blocks owns a row at a time (each block a slice of cols / CTAS
// values, PER float4 a thread); a persistent grid of clusters takes rows from a counter in global
// memory, so a cluster that could not be placed (cluster placement depends on the GPU's layout) only
// takes fewer rows. Each block has STAGES slice buffers that cp.async fills, each thread copying and
// later reading only its own float4s (no block-wide wait on the data); a buffer is refilled with the
// row STAGES iterations on as soon as its slice is in registers. Per row, one cluster barrier:
// before it each warp publishes its (max, sum) pair, and the cluster's leader thread the row of a
// later stage; after it every warp merges the cluster's pairs from distributed shared memory and
// writes its part of the row.
// The leader takes each row two iterations before its loads are issued, so neither the counter's
// latency nor the publishing sits between a slice arriving and its buffer being refilled.
// work[0] is the next row to take, work[1] counts the clusters that are done; the last one resets
// both, so the counter is zero again for the next launch on the stream.
#define WARPS (THREADS / 32)
#define RING (STAGES + 2)  // rows published: STAGES in flight, the next, and the one after it
__device__ __forceinline__ void cp_async16(float4* shared, const float4* global) {
    unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(address), "l"(global) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}

extern "C" __global__ void softmax_work_reset(int* work) { work[0] = 0; work[1] = 0; }

extern "C" __global__ void __cluster_dims__(CTAS, 1, 1) __launch_bounds__(THREADS, OCCUPANCY)
softmax_pipelined(const float* __restrict__ x, float* __restrict__ y, i64 rows, i64 cols, int* work) {
    extern __shared__ float4 slices[];  // STAGES x THREADS x PER float4, thread t's k-th at k * THREADS + t
    __shared__ float2 pair[2][WARPS];  // each warp's (max, sum), by iteration parity
    __shared__ int ring[RING];  // the row of iteration i sits in ring[i % RING]
    const unsigned rank = cluster_rank();
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const bool leader = rank == 0 && t == 0;
    const i64 n4 = (cols >> 2) / CTAS;  // this block's float4 of a row
    const i64 offset = (i64)rank * n4;

    auto issue = [&](int stage, i64 row) {  // this thread's float4 of `row` into slice `stage`
        if (row < rows) {
            const float4* from = reinterpret_cast<const float4*>(x + row * cols) + offset;
            float4* to = slices + stage * (THREADS * PER);
#pragma unroll
            for (int k = 0; k < PER; ++k) {
                const int i = k * THREADS + t;
                if (i < n4) cp_async16(to + i, from + i);
            }
        }
        cp_async_commit();  // an empty group too, so wait_group counts stages
    };

    cluster_barrier();  // every block of the cluster has started: its shared memory may be written
    int claimed = 0;  // the leader's next row, taken an iteration before it is published
    if (leader) {
        const int first = atomicAdd(work, STAGES + 1);
        for (unsigned r = 0; r < CTAS; ++r)
            for (int s = 0; s <= STAGES; ++s) cluster_store(&ring[s], r, first + s);
        claimed = atomicAdd(work, 1);
    }
    cluster_barrier();
#pragma unroll
    for (int s = 0; s < STAGES; ++s) issue(s, ring[s]);

    for (int it = 0;; ++it) {
        const int stage = it % STAGES;
        const i64 row = ring[it % RING];
        if (row >= rows) break;  // rows are taken in order: every later iteration is empty too
        cp_async_wait<STAGES - 1>();
        const float4* slice = slices + stage * (THREADS * PER);
        float4 v[PER];
        float m = NEG_INF;
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const int i = k * THREADS + t;
            v[k] = i < n4 ? slice[i] : make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
            m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
        }
        // the slice is in registers now: its buffer takes the row STAGES iterations on (published
        // before the last barrier), so the loads stay STAGES rows ahead while this one is written
        issue(stage, ring[(it + STAGES) % RING]);
        if (leader) {
            for (unsigned r = 0; r < CTAS; ++r) cluster_store(&ring[(it + STAGES + 1) % RING], r, claimed);
            claimed = atomicAdd(work, 1);  // its latency hides behind this iteration
        }
        // v becomes exp(v - m), this thread's max; the sum is NaN when the slice holds a NaN
        float s = 0.0f;
        const float base = m == NEG_INF ? 0.0f : m;
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            v[k] = make_float4(expf(v[k].x - base), expf(v[k].y - base), expf(v[k].z - base), expf(v[k].w - base));
            s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        }
        const float mine = m;
        warp_online(m, s);
        if (lane == 0) pair[it & 1][warp] = make_float2(m, s);
        cluster_barrier();  // every warp's pair and the leader's row are published
        // each warp merges the cluster's CTAS x WARPS pairs itself: no block-wide step on the way
        m = NEG_INF;
        s = 0.0f;
#pragma unroll
        for (int j = lane; j < CTAS * WARPS; j += 32) {
            const float2 theirs = cluster_load(&pair[it & 1][j % WARPS], j / WARPS);
            online_merge(m, s, theirs.x, theirs.y);
        }
        warp_online(m, s);
        const float2 total = make_float2(m, 1.0f / s);
        // exp(x - mine) * exp(mine - max) / sum; a slice of -inf only (mine = -inf) scales by 0
        const float scale = (mine == NEG_INF ? 0.0f : expf(mine - total.x)) * total.y;
        float4* out = reinterpret_cast<float4*>(y + row * cols) + offset;
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const int i = k * THREADS + t;
            if (i < n4) __stcs(out + i, make_float4(v[k].x * scale, v[k].y * scale, v[k].z * scale, v[k].w * scale));
        }
    }
    cluster_barrier();  // no block leaves while another may still read its pair
    if (leader) {
        __threadfence();
        if (atomicAdd(work + 1, 1) == (int)(gridDim.x / CTAS) - 1) { work[0] = 0; work[1] = 0; }
    }
}
