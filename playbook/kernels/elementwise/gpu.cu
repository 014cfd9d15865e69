extern "C" __global__ void ew_naive(const float* __restrict__ x, float* __restrict__ y, i64 n) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = op(x[i]);
}

// Grid-stride loop over float4s (UNROLL per thread per step) plus a scalar tail.
extern "C" __global__ void ew_vec4(const float* __restrict__ x, float* __restrict__ y, i64 n) {
    i64 n4 = n >> 2, stride = (i64)gridDim.x * blockDim.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (i64 base = (i64)blockIdx.x * blockDim.x + threadIdx.x; base < n4; base += stride * UNROLL) {
        float4 v[UNROLL];
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            if (base + u * stride < n4) v[u] = STREAM ? __ldcs(x4 + base + u * stride) : x4[base + u * stride];
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (base + u * stride >= n4) continue;
            float4 o = make_float4(op(v[u].x), op(v[u].y), op(v[u].z), op(v[u].w));
            if (STREAM) __stcs(y4 + base + u * stride, o); else y4[base + u * stride] = o;
        }
    }
    for (i64 i = (n4 << 2) + (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = op(x[i]);
}
