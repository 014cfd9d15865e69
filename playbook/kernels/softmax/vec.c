static float row_max_v(const float* x, i64 n) {
    vf m[UNROLL];
    for (int u = 0; u < UNROLL; ++u) m[u] = vsplat(-INFINITY);
    i64 i = 0;
    for (; i + UNROLL * VL <= n; i += UNROLL * VL)
        for (int u = 0; u < UNROLL; ++u) m[u] = vmax(m[u], vload(x + i + u * VL));
    for (; i + VL <= n; i += VL) m[0] = vmax(m[0], vload(x + i));
    for (int u = 1; u < UNROLL; ++u) m[0] = vmax(m[0], m[u]);
    float r = vmaxall(m[0]);
    for (; i < n; ++i) r = x[i] > r ? x[i] : r;
    return r;
}

static float row_exp_sum_v(const float* x, float* y, i64 n, float mx) {
    vf s[UNROLL], m = vsplat(mx);
    for (int u = 0; u < UNROLL; ++u) s[u] = vsplat(0.0f);
    i64 i = 0;
    for (; i + UNROLL * VL <= n; i += UNROLL * VL)
        for (int u = 0; u < UNROLL; ++u) {
            vf e = vexp_neg(vload(x + i + u * VL) - m);
            vstore(y + i + u * VL, e);
            s[u] += e;
        }
    for (; i + VL <= n; i += VL) {
        vf e = vexp_neg(vload(x + i) - m);
        vstore(y + i, e);
        s[0] += e;
    }
    for (int u = 1; u < UNROLL; ++u) s[0] += s[u];
    float total = vsum(s[0]);
    if (i < n) {
        float pad[VL];
        for (int l = 0; l < VL; ++l) pad[l] = i + l < n ? x[i + l] : mx;
        vf e = vexp_neg(vload(pad) - m);
        for (int l = 0; i + l < n; ++l) { y[i + l] = e[l]; total += e[l]; }
    }
    return total;
}

static void row_scale_v(const float* e, float* y, i64 n, float a) {
    vf v = vsplat(a);
    i64 i = 0;
#if STREAM && defined(__AVX512F__)
    for (; i < n && ((uintptr_t)(y + i) & 63); ++i) y[i] = e[i] * a;
    for (; i + VL <= n; i += VL) _mm512_stream_ps(y + i, (__m512)(vload(e + i) * v));
#endif
    for (; i + VL <= n; i += VL) vstore(y + i, vload(e + i) * v);
    for (; i < n; ++i) y[i] = e[i] * a;
}

void softmax(const float* x, float* y, i64 rows, i64 cols) {
#if STREAM
    /* STREAM: the exponentials go to an L1-resident scratch row, and the output is written once
       with non-temporal stores, so its cache lines are never read in from memory first. */
    static __thread float scratch[STREAM];
    float* e = cols <= STREAM ? scratch : 0;
#endif
    for (i64 r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
#if STREAM
        float* er = e ? e : yr;
#else
        float* er = yr;
#endif
        float mx = row_max_v(xr, cols);
        float s = row_exp_sum_v(xr, er, cols, mx);
        row_scale_v(er, yr, cols, 1.0f / s);
    }
#if STREAM && defined(__AVX512F__)
    _mm_sfence();
#endif
}
