static inline vd vsplat_d(double a) { return (vd){0} + a; }

static void row_stats_v(const float* x, i64 n, double* mean_out, double* var_out) {
    const int H = VL / 2;
    i64 i = 0;
#if ONE_PASS == 2
    /* float vectors within chunks of 64 values per lane pair, widened and merged into double
       vectors per chunk: half the conversions of all-double sums, still no long float sums */
    float shift = x[0];
    vf sh = vsplat(shift);
    vd S = vsplat_d(0.0), Q = S;
    for (; i + 4 * VL <= n;) {
        vf s0 = vsplat(0.0f), s1 = s0, q0 = s0, q1 = s0;
        i64 end = n - i >= 64 * VL ? i + 64 * VL : i + (n - i) / (4 * VL) * (4 * VL);
        for (; i < end; i += 4 * VL) {
            vf d0 = vload(x + i) - sh, d1 = vload(x + i + VL) - sh;
            vf d2 = vload(x + i + 2 * VL) - sh, d3 = vload(x + i + 3 * VL) - sh;
            s0 += d0 + d2; s1 += d1 + d3;
            q0 += d0 * d0; q1 += d1 * d1; q0 += d2 * d2; q1 += d3 * d3;
        }
        float t[VL];
        vstore(t, s0 + s1); S += vload_d(t) + vload_d(t + H);
        vstore(t, q0 + q1); Q += vload_d(t) + vload_d(t + H);
    }
    double s = vsum_d(S), q = vsum_d(Q);
    for (; i < n; ++i) { double d = (double)x[i] - shift; s += d; q += d * d; }
    double md = s / n;
    *mean_out = shift + md;
    double var = q / n - md * md;
    *var_out = var > 0.0 ? var : 0.0;
#elif ONE_PASS
    double shift = x[0];
    vd sh = vsplat_d(shift), s0 = vsplat_d(0.0), s1 = s0, s2 = s0, s3 = s0, q0 = s0, q1 = s0, q2 = s0, q3 = s0;
    for (; i + 2 * VL <= n; i += 2 * VL) {
        vd d0 = vload_d(x + i) - sh, d1 = vload_d(x + i + H) - sh;
        vd d2 = vload_d(x + i + 2 * H) - sh, d3 = vload_d(x + i + 3 * H) - sh;
        s0 += d0; s1 += d1; s2 += d2; s3 += d3;
        q0 += d0 * d0; q1 += d1 * d1; q2 += d2 * d2; q3 += d3 * d3;
    }
    for (; i + VL <= n; i += VL) {
        vd d0 = vload_d(x + i) - sh, d1 = vload_d(x + i + H) - sh;
        s0 += d0; s1 += d1;
        q0 += d0 * d0; q1 += d1 * d1;
    }
    double s = vsum_d((s0 + s1) + (s2 + s3)), q = vsum_d((q0 + q1) + (q2 + q3));
    for (; i < n; ++i) { double d = x[i] - shift; s += d; q += d * d; }
    double md = s / n;
    *mean_out = shift + md;
    double var = q / n - md * md;
    *var_out = var > 0.0 ? var : 0.0;
#else
    vd s0 = vsplat_d(0.0), s1 = s0;
    for (; i + VL <= n; i += VL) { s0 += vload_d(x + i); s1 += vload_d(x + i + H); }
    double s = vsum_d(s0 + s1);
    for (; i < n; ++i) s += x[i];
    double mean = s / n;
    vd m = vsplat_d(mean), q0 = vsplat_d(0.0), q1 = q0;
    for (i = 0; i + VL <= n; i += VL) {
        vd d0 = vload_d(x + i) - m, d1 = vload_d(x + i + H) - m;
        q0 += d0 * d0; q1 += d1 * d1;
    }
    double q = vsum_d(q0 + q1);
    for (; i < n; ++i) { double d = x[i] - mean; q += d * d; }
    *mean_out = mean;
    *var_out = q / n;
#endif
}

void layernorm(const float* x, const float* w, const float* b, float* y, i64 rows, i64 n, float eps) {
    for (i64 r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        double mean, var;
        row_stats_v(xr, n, &mean, &var);
        float rstd = (float)(1.0 / sqrt(var + (double)eps));
        float hi = (float)mean, lo = (float)(mean - hi);
        vf vh = vsplat(hi), vl = vsplat(lo), vr = vsplat(rstd);
        i64 i = 0;
        if (w && b) {
            for (; i + VL <= n; i += VL) {
#if PREFETCH
                /* the next row's statistics pass will want its start: fetch it while writing */
                if (r + 1 < rows) __builtin_prefetch(xr + n + i, 0, 3);
#endif
                vstore(yr + i, ((vload(xr + i) - vh) - vl) * vr * vload(w + i) + vload(b + i));
            }
        } else {
            for (; i + VL <= n; i += VL) {
                vf v = ((vload(xr + i) - vh) - vl) * vr;
                if (w) v *= vload(w + i);
                if (b) v += vload(b + i);
                vstore(yr + i, v);
            }
        }
        for (; i < n; ++i) {
            float v = ((xr[i] - hi) - lo) * rstd;
            if (w) v *= w[i];
            if (b) v += b[i];
            yr[i] = v;
        }
    }
}
