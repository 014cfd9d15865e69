static void stats(const float* xr, i64 n, double* mean_out, double* var_out) {
#if MODE == 2
    double count = 0.0, mean = 0.0, m2 = 0.0;
    for (i64 start = 0; start < n; start += CHUNK) {
        i64 len = n - start < CHUNK ? n - start : CHUNK;
        const float* c = xr + start;
        double s = 0.0;
        #pragma omp simd reduction(+:s)
        for (i64 i = 0; i < len; ++i) s += c[i];
        double cm = s / len;
        float hi = (float)cm, lo = (float)(cm - hi);
        double q = 0.0;
        #pragma omp simd reduction(+:q)
        for (i64 i = 0; i < len; ++i) { float d = (c[i] - hi) - lo; q += (double)d * d; }
        double total = count + len, delta = cm - mean;
        mean += delta * len / total;
        m2 += q + delta * delta * count * len / total;
        count = total;
    }
    *mean_out = mean;
    *var_out = m2 / n;
#else
    double s = 0.0;
#if MODE == 1
    #pragma omp simd reduction(+:s)
#endif
    for (i64 i = 0; i < n; ++i) s += xr[i];
    double mean = s / n, q = 0.0;
#if MODE == 1
    #pragma omp simd reduction(+:q)
#endif
    for (i64 i = 0; i < n; ++i) { double d = xr[i] - mean; q += d * d; }
    *mean_out = mean;
    *var_out = q / n;
#endif
}

void layernorm(const float* x, const float* w, const float* b, float* y, i64 rows, i64 n, float eps) {
#if PARALLEL
    #pragma omp parallel for schedule(static)
#endif
    for (i64 r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        double mean, var;
        stats(xr, n, &mean, &var);
        float rstd = (float)(1.0 / sqrt(var + (double)eps));
        float hi = (float)mean, lo = (float)(mean - hi);
        #pragma omp simd
        for (i64 i = 0; i < n; ++i) {
            float v = ((xr[i] - hi) - lo) * rstd;
            if (w) v *= w[i];
            if (b) v += b[i];
            yr[i] = v;
        }
    }
}
