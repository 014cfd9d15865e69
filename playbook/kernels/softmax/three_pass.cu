extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, i64 rows, i64 cols) {
    __shared__ float scratch[32];
    const float* xr = x + (i64)blockIdx.x * cols;
    float* yr = y + (i64)blockIdx.x * cols;
    float m = NEG_INF;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) s += expf(xr[c] - m);
    s = block_sum(s, scratch);
    float inv = 1.0f / s;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) * inv;
}
