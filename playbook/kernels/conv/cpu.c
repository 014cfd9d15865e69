#include <stdlib.h>
static void conv_plane(const float* x, const float* w, const float* bias, float* out, i64 n, i64 oc,
                       GEOMETRY) {
    const float* wo = w + oc * C * KH * KW;
#if MODE == 0
    for (i64 oh = 0; oh < OH; ++oh)
        for (i64 ow = 0; ow < OW; ++ow) {
            double s = bias ? bias[oc] : 0.0;
            for (i64 c = 0; c < C; ++c)
                for (i64 kh = 0; kh < KH; ++kh)
                    for (i64 kw = 0; kw < KW; ++kw) {
                        i64 ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
                        if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                            s += (double)x[((n * C + c) * H + ih) * W + iw] * wo[(c * KH + kh) * KW + kw];
                    }
            out[oh * OW + ow] = RELU && s < 0.0 ? 0.0f : (float)s;
        }
#else
    double* acc = (double*)malloc(sizeof(double) * OH * OW);
    for (i64 p = 0; p < OH * OW; ++p) acc[p] = bias ? bias[oc] : 0.0;
    for (i64 c = 0; c < C; ++c)
        for (i64 kh = 0; kh < KH; ++kh)
            for (i64 kw = 0; kw < KW; ++kw) {
                float wv = wo[(c * KH + kh) * KW + kw];
                for (i64 oh = 0; oh < OH; ++oh) {
                    i64 ih = oh * SH - PH + kh * DH;
                    if (ih < 0 || ih >= H) continue;
                    const float* xr = x + ((n * C + c) * H + ih) * W;
                    /* ow range with 0 <= ow*SW - PW + kw*DW < W */
                    i64 off = kw * DW - PW, lo = off < 0 ? (-off + SW - 1) / SW : 0;
                    i64 hi = (W - 1 - off) < 0 ? -1 : (W - 1 - off) / SW;
                    if (hi > OW - 1) hi = OW - 1;
                    double* arow = acc + oh * OW;
                    for (i64 ow = lo; ow <= hi; ++ow) arow[ow] += (double)wv * xr[ow * SW + off];
                }
            }
    for (i64 p = 0; p < OH * OW; ++p) out[p] = RELU && acc[p] < 0.0 ? 0.0f : (float)acc[p];
    free(acc);
#endif
}

static void pool_plane(const float* in, float* out, i64 OH, i64 OW, i64 PH_, i64 PW_,
                       i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW) {
    for (i64 y = 0; y < PH_; ++y)
        for (i64 x = 0; x < PW_; ++x) {
            float m = -INFINITY;
            for (i64 a = 0; a < QH; ++a)
                for (i64 b = 0; b < QW; ++b) {
                    i64 r = y * QSH - QPH + a, c = x * QSW - QPW + b;
                    if (r < 0 || r >= OH || c < 0 || c >= OW) continue;
                    float v = in[r * OW + c];
                    if (v > m || v != v) m = v;
                }
            out[y * PW_ + x] = m;
        }
}

void conv2d(const float* x, const float* w, const float* bias, float* out, GEOMETRY) {
#if PARALLEL && DYNAMIC
    #pragma omp parallel for collapse(2) schedule(dynamic)
#elif PARALLEL
    #pragma omp parallel for collapse(2) schedule(static)
#endif
    for (i64 n = 0; n < N; ++n)
        for (i64 oc = 0; oc < OC; ++oc)
            conv_plane(x, w, bias, out + (n * OC + oc) * OH * OW, n, oc, N, C, H, W, OC, KH, KW, OH, OW,
                       SH, SW, PH, PW, DH, DW);
}

/* conv + ReLU + max-pool; each (n, oc) plane is convolved into `scratch` (its own slice), then pooled
   while it is still in cache. */
void conv_relu_pool(const float* x, const float* w, const float* bias, float* scratch, float* out, GEOMETRY,
                    i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW, i64 POH, i64 POW) {
#if PARALLEL && DYNAMIC
    #pragma omp parallel for collapse(2) schedule(dynamic)
#elif PARALLEL
    #pragma omp parallel for collapse(2) schedule(static)
#endif
    for (i64 n = 0; n < N; ++n)
        for (i64 oc = 0; oc < OC; ++oc) {
            float* plane = scratch + (n * OC + oc) * OH * OW;
            conv_plane(x, w, bias, plane, n, oc, N, C, H, W, OC, KH, KW, OH, OW, SH, SW, PH, PW, DH, DW);
            pool_plane(plane, out + (n * OC + oc) * POH * POW, OH, OW, POH, POW, QH, QW, QSH, QSW, QPH, QPW);
        }
}
