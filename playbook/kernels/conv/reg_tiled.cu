// Direct convolution, register-tiled over (out-channel, pixel). A block owns DC_R output rows x
// DC_G*DC_PT output columns of one image and DC_OCB output channels. Per input channel it stages the
// input rows those outputs need (zero padding included) and the channel's weights, tap-major
// [kh][kw][oc], in shared memory with cp.async (8-byte input pairs and 16-byte weight quads where
// aligned; DC_DB: two buffers, the next channel loads while this one computes). Each thread owns
// DC_OCT channels x DC_PT consecutive pixels of one row: per kernel row it loads the (DC_PT-1)*SW+KW
// input values its pixels touch into registers (float4), and per tap DC_OCT weights (float4
// broadcasts), feeding DC_OCT*DC_PT FMAs. The output tile goes back through shared memory so the
// global writes coalesce; with pooling, ReLU + max-pool run there (windows that straddle two blocks
// are combined with an integer atomicMax, valid because post-ReLU values are >= 0, into an output
// zeroed beforehand).
#ifndef DC_DB
#define DC_DB 0
#endif
#ifndef DC_RPAD
#define DC_RPAD 0
#endif
__device__ __forceinline__ unsigned dc_smem(const void* p) {
    unsigned d;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(d) : "l"(p));
    return d;
}
#if __CUDA_ARCH__ >= 800
#define DC_CP(N) __device__ __forceinline__ void dc_cp##N(unsigned dst, const float* src, bool ok) { \
    asm volatile("cp.async.ca.shared.global [%0], [%1], " #N ", %2;\n" :: "r"(dst), "l"(src), "r"(ok ? N : 0)); }
DC_CP(4) DC_CP(8) DC_CP(16)
__device__ __forceinline__ void dc_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void dc_wait() {
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
#else
#define DC_CP(N) __device__ __forceinline__ void dc_cp##N(unsigned dst, const float* src, bool ok) { \
    for (int i = 0; i < N / 4; ++i) { float v = ok ? src[i] : 0.0f; \
        asm volatile("st.shared.f32 [%0], %1;" :: "r"(dst + 4 * i), "f"(v)); } }
DC_CP(4) DC_CP(8) DC_CP(16)
__device__ __forceinline__ void dc_commit() {}
template <int N> __device__ __forceinline__ void dc_wait() {}
#endif

// ReLU'd conv tile [ocs][rows][OW] (row pitch tw) -> the max-pool windows that touch rows
// [oh0, oh0 + rows). Kept out of line: the main loop's registers are not live here.
__device__ __noinline__ void dc_pool_tile(const float* tile, float* __restrict__ out, int rt, int tw, int nth, int t,
                                          int n, int oc0, int oh0, int rows, int ocs, int OC, int OH, int OW, int QH,
                                          int QW, int QSH, int QSW, int QPH, int QPW, int POH, int POW) {
    int lo = oh0 + QPH - QH + 1;
    const int py0 = lo <= 0 ? 0 : (lo + QSH - 1) / QSH, py1 = min(POH - 1, (oh0 + rows - 1 + QPH) / QSH);
    const int npy = py1 - py0 + 1;
    for (int e = t; e < ocs * npy * POW; e += nth) {
        int j = e / (npy * POW), q = e - j * (npy * POW), py = py0 + q / POW, px = q % POW;
        int r0 = py * QSH - QPH, c0 = px * QSW - QPW;
        int ra = max(r0, 0), rb = min(r0 + QH, OH), la = max(ra, oh0), lb = min(rb, oh0 + rows);
        int ca = max(c0, 0), cb = min(c0 + QW, OW);
        float m = NEG_INF;
        for (int rr = la; rr < lb; ++rr)
            for (int cc = ca; cc < cb; ++cc) {
                float v = tile[(j * rt + rr - oh0) * tw + cc];
                if (v > m || v != v) m = v;
            }
        float* dst = out + ((i64)(n * OC + oc0 + j) * POH + py) * POW + px;
        if (la == ra && lb == rb) *dst = m;  // the whole window lies in this block
        else if (la < lb) atomicMax(reinterpret_cast<int*>(dst), __float_as_int(m));
    }
}

template <int KH_, int KW_, int SH_, int SW_>
struct DcTile {
    static constexpr int TR = DC_R, TG = DC_G, TPT = DC_PT, TOCT = DC_OCT, TOCB = DC_OCB;
    static constexpr int NPIX = TR * TG, NTH = NPIX * (TOCB / TOCT), TW = TG * TPT, TAPS = KH_ * KW_;
    static constexpr int IR = (TR - 1) * SH_ + KH_;                   // input rows a block reads
    static constexpr int XN = (TPT - 1) * SW_ + KW_;                  // inputs one thread's pixels touch per row
    static constexpr int XN4 = (XN + 3) / 4 * 4, XSTEP = TPT * SW_;
    static constexpr int P = ((TG - 1) * XSTEP + XN4 + 3) / 4 * 4;   // staged columns (row pitch)
    // input row `row` starts at row * P + RPAD * (row / SH): with RPAD = 12 the rows that neighbouring
    // output rows read at the same kernel row fall on other banks (fewer float4 load conflicts)
    static constexpr int RPAD = DC_RPAD;
    static constexpr int XS = (IR * P + RPAD * ((IR - 1) / SH_ + 1) + 3) / 4 * 4;
    static constexpr int STAGE = XS + TAPS * TOCB;                    // floats per buffer
    static constexpr bool VEC = XSTEP % 4 == 0;
    static_assert(TOCT % 4 == 0 && TOCB % TOCT == 0, "DC_OCT must divide DC_OCB and be a multiple of 4");

    static __device__ __forceinline__ int rowoff(int row) { return row * P + RPAD * (row / SH_); }

    // input rows into shared memory, V (1 or 2) floats per cp.async; each thread keeps one column
    template <int V>
    static __device__ __forceinline__ void stage_x(unsigned xs, const float* xc, int ih0, int iw0, int H, int W,
                                                   int t) {
        constexpr int PV = P / V;
        if constexpr (NTH >= PV) {
            constexpr int RS = NTH / PV;  // rows per sweep
            const int cc = t % PV, r0 = t / PV;
            if (r0 < RS) {
                const int iw = iw0 + V * cc;
                const bool okc = (unsigned)iw < (unsigned)W;
                for (int rr = r0; rr < IR; rr += RS) {
                    const int ih = ih0 + rr;
                    const bool ok = okc && (unsigned)ih < (unsigned)H;
                    const unsigned dst = xs + 4u * (rowoff(rr) + V * cc);
                    if constexpr (V == 2) dc_cp8(dst, ok ? xc + ih * W + iw : xc, ok);
                    else dc_cp4(dst, ok ? xc + ih * W + iw : xc, ok);
                }
            }
        } else {
            for (int e = t; e < IR * PV; e += NTH) {
                const int rr = e / PV, cc = e - rr * PV, ih = ih0 + rr, iw = iw0 + V * cc;
                const bool ok = (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
                const unsigned dst = xs + 4u * (rowoff(rr) + V * cc);
                if constexpr (V == 2) dc_cp8(dst, ok ? xc + ih * W + iw : xc, ok);
                else dc_cp4(dst, ok ? xc + ih * W + iw : xc, ok);
            }
        }
    }

    // one input channel's rows and weights into a buffer; t = thread index
    static __device__ __forceinline__ void stage(float* buf, const float* xc, const float* wc, int ih0, int iw0,
                                                 int H, int W, int OC, int oc0, int t) {
        const unsigned xs = dc_smem(buf), ws = dc_smem(buf + XS);
        if (((iw0 | W) & 1) == 0) stage_x<2>(xs, xc, ih0, iw0, H, W, t);  // pairs: entirely inside or outside
        else stage_x<1>(xs, xc, ih0, iw0, H, W, t);
        if ((OC & 3) == 0) {  // weights [tap][OC] -> [tap][TOCB], 16 bytes at a time
            constexpr int Q = TOCB / 4;
            for (int e = t; e < TAPS * Q; e += NTH) {
                int tap = e / Q, j = (e - tap * Q) * 4;
                bool ok = oc0 + j < OC;
                dc_cp16(ws + 16u * e, ok ? wc + tap * OC + oc0 + j : wc, ok);
            }
        } else {
            for (int e = t; e < TAPS * TOCB; e += NTH) {
                int tap = e / TOCB, j = e - tap * TOCB;
                bool ok = oc0 + j < OC;
                dc_cp4(ws + 4u * e, ok ? wc + tap * OC + oc0 + j : wc, ok);
            }
        }
        dc_commit();
    }

    static __device__ __forceinline__ void compute(const float* buf, int r, int g, int og, float (&acc)[TOCT][TPT]) {
        const float* xb = buf + rowoff(r * SH_) + g * XSTEP;
        const float* wb = buf + XS + og * TOCT;
        #pragma unroll 1
        for (int kh = 0; kh < KH_; ++kh) {
            float xv[XN4];
            const float* xk = xb + kh * P + RPAD * (kh / SH_);
            if constexpr (!VEC) {
                #pragma unroll
                for (int q = 0; q < XN4; ++q) xv[q] = xk[q];
            } else {
                #pragma unroll
                for (int q = 0; q < XN4 / 4; ++q) {
                    float4 v = *reinterpret_cast<const float4*>(xk + 4 * q);
                    xv[4 * q] = v.x; xv[4 * q + 1] = v.y; xv[4 * q + 2] = v.z; xv[4 * q + 3] = v.w;
                }
            }
            const float* wk = wb + kh * KW_ * TOCB;
            #pragma unroll
            for (int kw = 0; kw < KW_; ++kw) {
                float wv[TOCT];
                #pragma unroll
                for (int j = 0; j < TOCT / 4; ++j) {
                    float4 q = *reinterpret_cast<const float4*>(wk + kw * TOCB + 4 * j);
                    wv[4 * j] = q.x; wv[4 * j + 1] = q.y; wv[4 * j + 2] = q.z; wv[4 * j + 3] = q.w;
                }
                #pragma unroll
                for (int p = 0; p < TPT; ++p)
                    #pragma unroll
                    for (int o = 0; o < TOCT; ++o) acc[o][p] = fmaf(xv[p * SW_ + kw], wv[o], acc[o][p]);
            }
        }
    }
};

template <int KH_, int KW_, int SH_, int SW_>
__device__ __forceinline__ void dc_body(const float* __restrict__ x, const float* __restrict__ wt,
                                        const float* __restrict__ bias, float* __restrict__ out, int C, int H, int W,
                                        int OC, int OH, int OW, int PH, int PW, int QH, int QW, int QSH, int QSW,
                                        int QPH, int QPW, int POH, int POW) {
    using T = DcTile<KH_, KW_, SH_, SW_>;
    constexpr int R_ = T::TR, G_ = T::TG, PT_ = T::TPT, OCT_ = T::TOCT, OCB_ = T::TOCB, NPIX = T::NPIX, NTH = T::NTH;
    constexpr int TW = T::TW, TAPS = T::TAPS;
    extern __shared__ __align__(16) float smem[];
    const int tilesW = (OW + TW - 1) / TW;
    const int oh0 = (int)(blockIdx.x / tilesW) * R_, ow0 = (int)(blockIdx.x % tilesW) * TW;
    const int oc0 = blockIdx.y * OCB_, n = blockIdx.z, t = threadIdx.x;
    const int og = t / NPIX, pix = t % NPIX, r = pix / G_, g = pix % G_;
    const int ih0 = oh0 * SH_ - PH, iw0 = ow0 * SW_ - PW;
    const float* xn = x + (i64)n * C * H * W;
    float acc[OCT_][PT_];
    #pragma unroll
    for (int o = 0; o < OCT_; ++o)
        #pragma unroll
        for (int p = 0; p < PT_; ++p) acc[o][p] = 0.0f;
    if constexpr (DC_DB) {  // two buffers: channel c + 1 loads while channel c computes
        T::stage(smem, xn, wt, ih0, iw0, H, W, OC, oc0, t);
        for (int c = 0; c < C; ++c) {
            if (c + 1 < C) {
                T::stage(smem + ((c + 1) & 1) * T::STAGE, xn + (i64)(c + 1) * H * W, wt + (i64)(c + 1) * TAPS * OC,
                         ih0, iw0, H, W, OC, oc0, t);
                dc_wait<1>();
            } else {
                dc_wait<0>();
            }
            __syncthreads();
            T::compute(smem + (c & 1) * T::STAGE, r, g, og, acc);
            __syncthreads();  // the buffer is free for channel c + 2
        }
    } else {
        for (int c = 0; c < C; ++c) {
            if (c) __syncthreads();  // every thread is done with the previous channel
            T::stage(smem, xn + (i64)c * H * W, wt + (i64)c * TAPS * OC, ih0, iw0, H, W, OC, oc0, t);
            dc_wait<0>();
            __syncthreads();
            T::compute(smem, r, g, og, acc);
        }
    }
    // epilogue. A full tile without pooling: bias (+ ReLU) straight from registers (each warp's stores
    // cover whole output rows, merged in L2). Otherwise through a [OCB][R][TW] tile in shared memory.
    if (POH == 0 && oh0 + R_ <= OH && ow0 + TW <= OW && oc0 + OCB_ <= OC) {  // uniform across the block
        const i64 plane = (i64)OH * OW;
        float* ob = out + ((i64)(n * OC + oc0 + og * OCT_) * OH + oh0 + r) * OW + ow0 + g * PT_;
        #pragma unroll
        for (int o = 0; o < OCT_; ++o) {
            float b = bias != nullptr ? bias[oc0 + og * OCT_ + o] : 0.0f;
            #pragma unroll
            for (int p = 0; p < PT_; ++p) {
                float v = acc[o][p] + b;
                if (RELU) v = v < 0.0f ? 0.0f : v;
                ob[o * plane + p] = v;
            }
        }
        return;
    }
    __syncthreads();
    float* tile = smem;
    #pragma unroll
    for (int o = 0; o < OCT_; ++o) {
        int oc = oc0 + og * OCT_ + o;
        float b = bias != nullptr && oc < OC ? bias[oc] : 0.0f;
        #pragma unroll
        for (int p = 0; p < PT_; ++p) {
            float v = acc[o][p] + b;
            if (RELU || POH) v = v < 0.0f ? 0.0f : v;
            tile[((og * OCT_ + o) * R_ + r) * TW + g * PT_ + p] = v;
        }
    }
    __syncthreads();
    const int rows = min(R_, OH - oh0), cols = min(TW, OW - ow0), ocs = min(OCB_, OC - oc0);
    if (POH == 0) {
        for (int e = t; e < OCB_ * R_ * TW; e += NTH) {
            int j = e / (R_ * TW), q = e - j * (R_ * TW), rr = q / TW, cc = q - rr * TW;
            if (j < ocs && rr < rows && cc < cols)
                out[((i64)(n * OC + oc0 + j) * OH + oh0 + rr) * OW + ow0 + cc] = tile[e];
        }
    } else {  // ReLU + max-pool (POH > 0); the block spans the full width (the launch checks OW <= TW)
        dc_pool_tile(tile, out, R_, TW, NTH, t, n, oc0, oh0, rows, ocs, OC, OH, OW, QH, QW, QSH, QSW, QPH, QPW, POH,
                     POW);
    }
}

#define DC_ARGS const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias, \
                float* __restrict__ out, GEOMETRY, i64 QH, i64 QW, i64 QSH, i64 QSW, i64 QPH, i64 QPW, i64 POH, i64 POW
#define DC_PASS x, wt, bias, out, (int)C, (int)H, (int)W, (int)OC, (int)OH, (int)OW, (int)PH, (int)PW, (int)QH, \
                (int)QW, (int)QSH, (int)QSW, (int)QPH, (int)QPW, (int)POH, (int)POW
#define DC_THREADS (DC_R * DC_G * (DC_OCB / DC_OCT))
// AlexNet-style 11x11 stride-4 kernels (the catalog's convolutions); other shapes take the fallback.
// POH = 0: convolution (+ ReLU if RELU); POH > 0: convolution + ReLU + max-pool.
extern "C" __global__ void __launch_bounds__(DC_THREADS, DC_MINB) dconv_k11s4(DC_ARGS) {
    dc_body<11, 11, 4, 4>(DC_PASS);
}
// weights [OC][C*KH*KW] -> [C*KH*KW][OC], so a block's staging reads are contiguous
extern "C" __global__ void dc_transpose(const float* __restrict__ w, float* __restrict__ wt, i64 OC, i64 K) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < OC * K) wt[e] = w[(e % OC) * K + e / OC];
}
extern "C" __global__ void dc_zero(float* __restrict__ p, i64 count) {
    i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < count) p[e] = 0.0f;
}
