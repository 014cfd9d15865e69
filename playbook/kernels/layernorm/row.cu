extern "C" __global__ void ln_rows(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                   float* __restrict__ y, i64 rows, i64 n, float eps) {
    __shared__ double scratch[32];
    const float* xr = x + (i64)blockIdx.x * n;
    float* yr = y + (i64)blockIdx.x * n;
    double s = 0.0;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) s += xr[i];
    double mean = block_sum_d(s, scratch) / n;
    double q = 0.0;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) { double d = xr[i] - mean; q += d * d; }
    double var = block_sum_d(q, scratch) / n;
    float rstd = (float)(1.0 / sqrt(var + (double)eps));
    float hi = (float)mean, lo = (float)(mean - hi);
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
        float v = ((xr[i] - hi) - lo) * rstd;
        if (w) v *= w[i];
        if (b) v += b[i];
        yr[i] = v;
    }
}
