// One thread per output value; RELU fuses the activation.
extern "C" __global__ void conv_direct(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ bias, float* __restrict__ out, GEOMETRY) {
    i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N * OC * OH * OW) return;
    i64 ow = idx % OW, oh = (idx / OW) % OH, oc = (idx / (OW * OH)) % OC, n = idx / (OW * OH * OC);
    float s = bias ? bias[oc] : 0.0f;
    for (i64 c = 0; c < C; ++c)
        for (i64 kh = 0; kh < KH; ++kh) {
            i64 ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (i64 kw = 0; kw < KW; ++kw) {
                i64 iw = ow * SW - PW + kw * DW;
                if (iw >= 0 && iw < W)
                    s = fmaf(x[((n * C + c) * H + ih) * W + iw], w[((oc * C + c) * KH + kh) * KW + kw], s);
            }
        }
    out[idx] = RELU && s < 0.0f ? 0.0f : s;
}
