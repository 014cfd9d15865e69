extern "C" __global__ void max_pool(const float* __restrict__ in, float* __restrict__ out, i64 planes, i64 OH, i64 OW,
                                    i64 POH, i64 POW, i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW) {
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= planes * POH * POW) return;
    i64 px = idx % POW, py = (idx / POW) % POH, plane = idx / (POW * POH);
    const float* p = in + plane * OH * OW;
    float m = NEG_INF;
    for (i64 a = 0; a < QH; ++a) {
        i64 r = py * QSH - QPH + a;
        if (r < 0 || r >= OH) continue;
        for (i64 b = 0; b < QW; ++b) {
            i64 c = px * QSW - QPW + b;
            if (c < 0 || c >= OW) continue;
            float v = p[r * OW + c];
            if (v > m || v != v) m = v;
        }
    }
    out[idx] = m;
}
