#define NT ((BM / TM) * (BN / TN))
#define A_PER ((BM * BK + NT - 1) / NT)
#define B_PER ((BK * BN + NT - 1) / NT)

extern "C" __global__ void __launch_bounds__(NT) GEMM_NAME(GEMM_PARAMS) {
    GEMM_SETUP
    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int tid = threadIdx.x, tr = tid / (BN / TN), tc = tid % (BN / TN);
    const i64 m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float ra[A_PER], rb[B_PER];
    const i64 tiles = (K + BK - 1) / BK;

    #define FETCH(k0)                                                                       \
        _Pragma("unroll") for (int u = 0; u < A_PER; ++u) {                                  \
            int e = tid + u * NT, r = e / BK, c = e % BK;                                    \
            i64 gm = m0 + r, gk = (k0) + c;                                                  \
            ra[u] = (e < BM * BK && gm < M && gk < K) ? LOAD_A(gm, gk) : 0.0f;               \
        }                                                                                    \
        _Pragma("unroll") for (int u = 0; u < B_PER; ++u) {                                  \
            int e = tid + u * NT, r = e / BN, c = e % BN;                                    \
            i64 gk = (k0) + r, gn = n0 + c;                                                  \
            rb[u] = (e < BK * BN && gk < K && gn < N) ? LOAD_B(gk, gn) : 0.0f;               \
        }
    #define STASH(buf)                                                                       \
        _Pragma("unroll") for (int u = 0; u < A_PER; ++u) {                                  \
            int e = tid + u * NT;                                                            \
            if (e < BM * BK) As[buf][e % BK][e / BK] = ra[u];                                \
        }                                                                                    \
        _Pragma("unroll") for (int u = 0; u < B_PER; ++u) {                                  \
            int e = tid + u * NT;                                                            \
            if (e < BK * BN) Bs[buf][e / BN][e % BN] = rb[u];                                \
        }

    FETCH(0)
    STASH(0)
    __syncthreads();
    for (i64 t = 0; t < tiles; ++t) {
        const int buf = DB ? (int)(t & 1) : 0;
        if (DB && t + 1 < tiles) { FETCH((t + 1) * BK) }
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[buf][k][tr * TM + i];
            #pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[buf][k][tc * TN + j];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (t + 1 < tiles) {
            if (DB) {
                STASH(buf ^ 1)
            } else {
                __syncthreads();
                FETCH((t + 1) * BK)
                STASH(0)
            }
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        i64 gm = m0 + tr * TM + i;
        if (gm >= M) continue;
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            i64 gn = n0 + tc * TN + j;
            if (gn < N) STORE_C(gm, gn, acc[i][j]);
        }
    }
}
