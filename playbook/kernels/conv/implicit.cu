// Implicit GEMM: A[m][k] = x at output pixel m and tap k (0 outside the image), B[k][n] = w[n][k].
__device__ __forceinline__ float im2col(const float* __restrict__ x, int m, int k, int C, int H, int W, int KH,
                                        int KW, int OH, int OW, int SH, int SW, int PH, int PW, int DH, int DW) {
    int ow = m % OW, t = m / OW, oh = t % OH, n = t / OH;
    int kw = k % KW, t2 = k / KW, kh = t2 % KH, c = t2 / KH;
    int ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
    if (ih < 0 || ih >= H || iw < 0 || iw >= W) return 0.0f;
    return __ldg(x + (((i64)n * C + c) * H + ih) * W + iw);
}
#define GEMM_NAME conv_gemm
#define GEMM_PARAMS const float* __restrict__ X, const float* __restrict__ Wt, const float* __restrict__ bias, \
                    float* __restrict__ Y, GEOMETRY
#define GEMM_SETUP const i64 M = N * OH * OW, K = C * KH * KW; const i64 Ncols = OC; \
                   const int c_ = C, h_ = H, w_ = W, kh_ = KH, kw_ = KW, oh_ = OH, ow_ = OW;
#define LOAD_A(m, k) im2col(X, (int)(m), (int)(k), c_, h_, w_, kh_, kw_, oh_, ow_, (int)SH, (int)SW, (int)PH, \
                            (int)PW, (int)DH, (int)DW)
#define LOAD_B(k, n) __ldg(Wt + (n) * K + (k))
#define STORE_C(m, n, v) { float r_ = (v) + (bias ? bias[n] : 0.0f); \
                           Y[((m) / (OH * OW) * OC + (n)) * (OH * OW) + (m) % (OH * OW)] = RELU && r_ < 0.0f ? 0.0f : r_; }
