#if PREFETCH
/* PREFETCH: blocks of 256 values, each first requesting the input PREFETCH values ahead (one
   request per cache line; prefetches past the end are harmless), so memory streams in while the
   vector loop computes. */
void elementwise(const float* x, float* y, i64 n) {
    i64 i = 0;
    for (; i + 256 <= n; i += 256) {
        for (int j = 0; j < 256; j += 16) __builtin_prefetch(x + i + PREFETCH + j, 0, 3);
        const float* xb = x + i;
        float* yb = y + i;
        #pragma omp simd
        for (int j = 0; j < 256; ++j) yb[j] = op(xb[j]);
    }
    for (; i < n; ++i) y[i] = op(x[i]);
}
#else
void elementwise(const float* x, float* y, i64 n) {
#if PARALLEL
    #pragma omp parallel for simd schedule(static)
#elif SIMD
    #pragma omp simd
#endif
    for (i64 i = 0; i < n; ++i) y[i] = op(x[i]);
}
#endif
