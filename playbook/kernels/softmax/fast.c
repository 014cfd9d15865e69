static float row_max(const float* xr, i64 cols) {
    float m = -INFINITY;
    #pragma omp simd reduction(max:m)
    for (i64 c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    return m;
}

static float exp_sum(const float* xr, float* yr, i64 cols, float m) {
    float s = 0.0f;
    #pragma omp simd reduction(+:s)
    for (i64 c = 0; c < cols; ++c) {
        float e = exp_neg(xr[c] - m);
#if STORE_EXP
        yr[c] = e;
#endif
        s += e;
    }
    return s;
}

static void row_softmax(const float* xr, float* yr, i64 cols) {
    float m, s;
#if ONLINE
    m = -INFINITY; s = 0.0f;
    for (i64 start = 0; start < cols; start += CHUNK) {
        i64 len = cols - start < CHUNK ? cols - start : CHUNK;
        float mb = row_max(xr + start, len);
        if (mb == -INFINITY) continue;
        if (mb > m) { s *= exp_neg(m - mb); m = mb; }
        s += exp_sum(xr + start, yr + start, len, m);
    }
#else
    m = row_max(xr, cols);
    s = exp_sum(xr, yr, cols, m);
#endif
    float inv = 1.0f / s;
#if STORE_EXP && !ONLINE
    #pragma omp simd
    for (i64 c = 0; c < cols; ++c) yr[c] *= inv;
#else
    #pragma omp simd
    for (i64 c = 0; c < cols; ++c) yr[c] = exp_neg(xr[c] - m) * inv;
#endif
}

void softmax(const float* x, float* y, i64 rows, i64 cols) {
#if PARALLEL
    #pragma omp parallel for schedule(static)
#endif
    for (i64 r = 0; r < rows; ++r) row_softmax(x + r * cols, y + r * cols, cols);
}
