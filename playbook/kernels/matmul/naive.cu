extern "C" __global__ void mm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                    i64 M, i64 N, i64 K, i64 sa, i64 sb, i64 sc) {
    A += blockIdx.z * sa; B += blockIdx.z * sb; C += blockIdx.z * sc;
    i64 row = (i64)blockIdx.y * blockDim.y + threadIdx.y, col = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float s = 0.0f;
    for (i64 k = 0; k < K; ++k) s = fmaf(A[row * K + k], B[k * N + col], s);
    C[row * N + col] = s;
}

// Square TILE x TILE shared-memory tiles: each A and B element is read from global memory
// N/TILE (resp. M/TILE) times instead of N (resp. M).
extern "C" __global__ void mm_smem(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   i64 M, i64 N, i64 K, i64 sa, i64 sb, i64 sc) {
    A += blockIdx.z * sa; B += blockIdx.z * sb; C += blockIdx.z * sc;
    __shared__ float As[TILE][TILE + 1], Bs[TILE][TILE];
    i64 row = (i64)blockIdx.y * TILE + threadIdx.y, col = (i64)blockIdx.x * TILE + threadIdx.x;
    float s = 0.0f;
    for (i64 k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = row < M && k0 + threadIdx.x < K ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = k0 + threadIdx.y < K && col < N ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) s = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], s);
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = s;
}
