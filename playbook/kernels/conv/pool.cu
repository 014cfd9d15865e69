// One thread per pooled output. The index arithmetic is 32-bit where the sizes allow (64-bit division
// is a long software sequence on the GPU and dominated this memory-bound kernel).
extern "C" __global__ void max_pool(const float* __restrict__ in, float* __restrict__ out, i64 planes, i64 OH, i64 OW,
                                    i64 POH, i64 POW, i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW) {
    const i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x, total = planes * POH * POW;
    if (idx >= total) return;
    i64 plane;
    int px, py;
    if (total < 0x7fffffff) {
        const int i = (int)idx, q = i / (int)POW;
        px = i - q * (int)POW;
        plane = q / (int)POH;
        py = q - (int)plane * (int)POH;
    } else {
        px = (int)(idx % POW);
        py = (int)((idx / POW) % POH);
        plane = idx / (POW * POH);
    }
    const float* p = in + plane * OH * OW;
    const int r0 = py * (int)QSH - (int)QPH, c0 = px * (int)QSW - (int)QPW;
    const int ra = max(r0, 0), rb = min(r0 + (int)QH, (int)OH), ca = max(c0, 0), cb = min(c0 + (int)QW, (int)OW);
    float m = NEG_INF;
    for (int r = ra; r < rb; ++r)
        for (int c = ca; c < cb; ++c) {
            const float v = p[(i64)r * OW + c];
            if (v > m || v != v) m = v;
        }
    out[idx] = m;
}
