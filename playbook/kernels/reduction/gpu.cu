extern "C" __global__ void reduce_naive(const float* __restrict__ x, float* __restrict__ y, i64 outer, i64 r, i64 inner) {
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= outer * inner) return;
    i64 o = idx / inner, i = idx % inner;
    const float* p = x + o * r * inner + i;
    acc_t a = IDENTITY;
    for (i64 k = 0; k < r; ++k) { acc_t b = p[k * inner]; a = COMBINE(a, b); }
    y[idx] = FINAL(a, r);
}

// Block of 32 x RY threads: 32 neighbouring trailing positions (coalesced), RY partial results
// along R merged through shared memory. For inner == 1, a block per output row instead.
extern "C" __global__ void reduce_tiled(const float* __restrict__ x, float* __restrict__ y, i64 outer, i64 r, i64 inner) {
    __shared__ acc_t part[RY][33];
    if (inner == 1) {
        i64 o = blockIdx.x;
        if (o >= outer) return;
        const float* p = x + o * r;
        acc_t a = IDENTITY;
        int t = threadIdx.y * 32 + threadIdx.x;
        for (i64 k = t; k < r; k += 32 * RY) { acc_t b = p[k]; a = COMBINE(a, b); }
        for (int off = 16; off > 0; off >>= 1) { acc_t b = __shfl_xor_sync(0xffffffffu, a, off); a = COMBINE(a, b); }
        if (threadIdx.x == 0) part[threadIdx.y][0] = a;
        __syncthreads();
        if (t == 0) {
            acc_t s = IDENTITY;
            for (int j = 0; j < RY; ++j) { acc_t b = part[j][0]; s = COMBINE(s, b); }
            y[o] = FINAL(s, r);
        }
        return;
    }
    i64 tiles = (inner + 31) / 32;
    i64 o = blockIdx.x / tiles, i = (blockIdx.x % tiles) * 32 + threadIdx.x;
    acc_t a = IDENTITY;
    if (o < outer && i < inner) {
        const float* p = x + o * r * inner + i;
        for (i64 k = threadIdx.y; k < r; k += RY) { acc_t b = p[k * inner]; a = COMBINE(a, b); }
    }
    part[threadIdx.y][threadIdx.x] = a;
    __syncthreads();
    if (threadIdx.y == 0 && o < outer && i < inner) {
        acc_t s = IDENTITY;
        for (int j = 0; j < RY; ++j) { acc_t b = part[j][threadIdx.x]; s = COMBINE(s, b); }
        y[o * inner + i] = FINAL(s, r);
    }
}
