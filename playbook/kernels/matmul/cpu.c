static void matmul_one(const float* a, const float* b, float* c, i64 M, i64 N, i64 K) {
#if MODE == 0
    for (i64 i = 0; i < M; ++i)
        for (i64 j = 0; j < N; ++j) {
            float s = 0.0f;
            for (i64 k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
            c[i * N + j] = s;
        }
#else
#if PARALLEL
    #pragma omp parallel for schedule(static)
#endif
    for (i64 i = 0; i < M; ++i) {
        float* cr = c + i * N;
        for (i64 j = 0; j < N; ++j) cr[j] = 0.0f;
#if MODE == 1
        for (i64 k = 0; k < K; ++k) {
            float av = a[i * K + k];
            const float* br = b + k * N;
            for (i64 j = 0; j < N; ++j) cr[j] += av * br[j];
        }
#else
        for (i64 j0 = 0; j0 < N; j0 += TILE) {
            i64 j1 = j0 + TILE < N ? j0 + TILE : N;
            for (i64 k = 0; k < K; ++k) {
                float av = a[i * K + k];
                const float* br = b + k * N;
                for (i64 j = j0; j < j1; ++j) cr[j] += av * br[j];
            }
        }
#endif
    }
#endif
}

void matmul(const float* a, const float* b, float* c, i64 batch, i64 M, i64 N, i64 K, i64 sa, i64 sb, i64 sc) {
    for (i64 z = 0; z < batch; ++z) matmul_one(a + z * sa, b + z * sb, c + z * sc, M, N, K);
}
