// Direct convolution, register-blocked over output channels: a block owns PIX output pixels of
// one image and OCB output channels, whose weights sit in shared memory as [tap][channel] so
// every thread reads the same float4 (a broadcast). Each input value loaded feeds OCB FMAs.
extern "C" __global__ void __launch_bounds__(PIX) conv_ocb(const float* __restrict__ x, const float* __restrict__ w,
                                                          const float* __restrict__ bias, float* __restrict__ out,
                                                          GEOMETRY) {
    extern __shared__ __align__(16) float ws[];
    const int K = (int)(C * KH * KW), oc0 = blockIdx.y * OCB;
    const i64 n = blockIdx.z;
    for (int e = threadIdx.x; e < OCB * K; e += blockDim.x) {
        int tap = e / OCB, j = e % OCB;
        ws[e] = oc0 + j < OC ? w[(i64)(oc0 + j) * K + tap] : 0.0f;
    }
    __syncthreads();
    const i64 p = (i64)blockIdx.x * PIX + threadIdx.x;
    if (p >= OH * OW) return;
    const int oh = (int)(p / OW), ow = (int)(p % OW);
    float acc[OCB];
    #pragma unroll
    for (int j = 0; j < OCB; ++j) acc[j] = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* xc = x + (n * C + c) * H * W;
        for (int kh = 0; kh < KH; ++kh) {
            int ih = oh * (int)SH - (int)PH + kh * (int)DH;
            if (ih < 0 || ih >= H) continue;
            const float* xr = xc + (i64)ih * W;
            const float4* wrow = reinterpret_cast<const float4*>(ws + (c * KH + kh) * KW * OCB);
            for (int kw = 0; kw < KW; ++kw) {
                int iw = ow * (int)SW - (int)PW + kw * (int)DW;
                if (iw < 0 || iw >= W) continue;
                float v = __ldg(xr + iw);
                const float4* wp = wrow + kw * (OCB / 4);
                #pragma unroll
                for (int j = 0; j < OCB / 4; ++j) {
                    float4 q = wp[j];
                    acc[4 * j] = fmaf(v, q.x, acc[4 * j]);
                    acc[4 * j + 1] = fmaf(v, q.y, acc[4 * j + 1]);
                    acc[4 * j + 2] = fmaf(v, q.z, acc[4 * j + 2]);
                    acc[4 * j + 3] = fmaf(v, q.w, acc[4 * j + 3]);
                }
            }
        }
    }
    #pragma unroll
    for (int j = 0; j < OCB; ++j) {
        int oc = oc0 + j;
        if (oc >= OC) break;
        float r = acc[j] + (bias ? bias[oc] : 0.0f);
        out[(n * OC + oc) * OH * OW + p] = RELU && r < 0.0f ? 0.0f : r;
    }
}
