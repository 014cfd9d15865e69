// Implicit-GEMM convolution in 3xTF32 on Hopper's warpgroup tensor cores (wgmma, sm_90a only; the wg_*
// helpers are in common/wgmma.cuh). The GEMM: M = N*OH*OW output pixels, N = OC, K = C*KH*KW taps.
//  cw_split: the weights [OC][K] (already K-major, as wgmma reads TF32 B) -> hi = tf32(w), lo = tf32(w - hi),
//    each Np x Kp, zero-padded to Np = 96-multiple out-channels and Kp = 32-multiple taps.
//  conv_wgmma_tf32x3: a persistent grid; each block of 256 threads (two warpgroups of 64 x 96) walks its tiles
//    of 128 pixels of one image x 96 out-channels. A tile's input rows (every channel, zero padding included:
//    XR rows x XW columns) are staged whole in shared memory, in one of two buffers, so the patch values are
//    read from there by address (pixel corner + tap offset from a table) rather than gathered per tap from
//    global memory. Weight k-tiles (32 deep, hi and lo, 128B-swizzled) stream through a STAGES-deep cp.async
//    ring that runs on from one tile into the next; the next tile's rows load with its first k-tile, while
//    this tile computes. The A fragments are split into TF32 hi/lo in registers; wgmma m64n96k8 sums
//    lo*hi + hi*lo + hi*hi of FLUSH k-steps from zero before an FADD into the fp32 accumulators (the tensor
//    cores truncate their own sums). Epilogue: bias, ReLU if RELU, NCHW stores.
// Forward checks what it needs (x and the output below 2^31 elements, the shared memory, at least STAGES - 1
// k-tiles) and otherwise takes the direct kernels.
#define CW_BM 128
#define CW_BN 96
#define CW_BK 32
#define CW_B_BYTES (CW_BN * CW_BK * 4)
#define CW_STAGE_BYTES (2 * CW_B_BYTES)  // 24576, a multiple of the 1024-byte swizzle pattern

extern "C" __global__ void __launch_bounds__(256) cw_split(const float* __restrict__ w, float* __restrict__ bt, i64 OC,
                                                           i64 K, i64 Kp, i64 Np, i64 lo_offset) {
    const i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= Np * Kp) return;
    const i64 n = e / Kp, k = e - n * Kp;
    const float v = n < OC && k < K ? w[n * K + k] : 0.0f;
    const unsigned big = wg_tf32(v);
    bt[e] = __uint_as_float(big);
    bt[e + lo_offset] = __uint_as_float(wg_tf32(v - __uint_as_float(big)));
}

extern "C" __global__ void __launch_bounds__(256, 1)
    conv_wgmma_tf32x3(const float* __restrict__ x, const float* __restrict__ bt, const float* __restrict__ bias,
                      float* __restrict__ y, GEOMETRY, i64 Kp, i64 Np, i64 lo_offset, i64 XR, i64 XW) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    // dynamic shared memory: [ring, 1024-aligned: STAGES x CW_STAGE_BYTES][two row buffers of XS floats][Kp taps]
    extern __shared__ unsigned char wg_raw[];
    const unsigned raw = (unsigned)__cvta_generic_to_shared(wg_raw);
    const unsigned ring = (raw + 1023u) & ~1023u;
    const int XS = ((int)(C * XR * XW) + 3) & ~3;
    float* rows_f = reinterpret_cast<float*>(wg_raw + (ring - raw) + STAGES * CW_STAGE_BYTES);
    const unsigned rows_s = ring + STAGES * CW_STAGE_BYTES;
    int* taps = reinterpret_cast<int*>(rows_f + 2 * XS);
    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;

    const int P = (int)(OH * OW), per_image = (P + CW_BM - 1) / CW_BM, xr = (int)XR, xw = (int)XW;
    const int Kt = (int)(C * KH * KW), tiles_n = (int)(Np / CW_BN), tiles_k = (int)(Kp / CW_BK);
    const int tiles = (int)N * per_image * tiles_n;
    const int mine = (int)blockIdx.x < tiles ? (tiles - 1 - (int)blockIdx.x) / (int)gridDim.x + 1 : 0;
    const int steps = mine * tiles_k;  // (tile, k-tile) pairs of this block, in order

    // tap k = (c, kh, kw) -> its offset from a pixel's window corner in a row buffer; -1: past K (reads zero)
    for (int k = tid; k < (int)Kp; k += 256) {
        int off = -1;
        if (k < Kt) {
            const int c = k / (int)(KH * KW), q = k - c * (int)(KH * KW), kh = q / (int)KW, kw = q - kh * (int)KW;
            off = (c * xr + kh * (int)DH) * xw + kw * (int)DW;
        }
        taps[k] = off;
    }

    // tile -> image n, its first pixel p0 (tiles never cross images), the first output row oh0, channel tile
    auto locate = [&](int j, int& n, int& p0, int& oh0, int& nt) {
        const int tile = (int)blockIdx.x + j * (int)gridDim.x, mt = tile / tiles_n;
        nt = tile - mt * tiles_n;
        n = mt / per_image;
        p0 = (mt - n * per_image) * CW_BM;
        oh0 = p0 / (int)OW;
    };
    // This thread's three 16-byte chunks of each weight tile (96 rows x 8 chunks; chunk c of row r sits at
    // c ^ r % 8, the 128-byte swizzle): offsets in the weights and in the stage, fixed for the whole kernel.
    int b_src[3];
    unsigned b_dst[3];
    #pragma unroll
    for (int u = 0; u < 3; ++u) {
        const int e = tid + u * 256, r = e >> 3, c = e & 7;
        b_src[u] = r * (int)Kp + c * 4;
        b_dst[u] = r * 128 + ((c ^ (r & 7)) << 4);
    }
    // the loads run ahead of the compute, one step per call, in step order
    int load_j = 0, load_kt = 0, load_n = 0, load_p0 = 0, load_oh0 = 0, load_nt = 0;
    auto load = [&](int stage) {
        const int kt = load_kt;
        if (kt == 0) {  // the tile's input rows, XR per channel from row oh0 * SH - PH, columns from -PW
            locate(load_j, load_n, load_p0, load_oh0, load_nt);
            const int n = load_n, oh0 = load_oh0;
            const unsigned buf = rows_s + (load_j & 1) * XS * 4;
            const float* xn = x + (i64)n * C * H * W;
            const int ih0 = oh0 * (int)SH - (int)PH;
            for (int row = tid >> 5; row < (int)C * xr; row += 8) {
                const int c = row / xr, ih = ih0 + row - c * xr;
                const bool in_h = (unsigned)ih < (unsigned)H;
                const float* src = xn + ((i64)c * H + ih) * W - PW;
                for (int col = lane; col < xw; col += 32) {
                    const bool ok = in_h && (unsigned)(col - (int)PW) < (unsigned)W;
                    wg_copy4(buf + 4 * (row * xw + col), ok ? src + col : x, ok ? 4 : 0);
                }
            }
        }
        const unsigned base = ring + stage * CW_STAGE_BYTES;
        const float* b_hi = bt + (i64)load_nt * CW_BN * Kp + kt * CW_BK;
        #pragma unroll
        for (int u = 0; u < 3; ++u) {
            wg_copy16(base + b_dst[u], b_hi + b_src[u], 16);
            wg_copy16(base + CW_B_BYTES + b_dst[u], b_hi + lo_offset + b_src[u], 16);
        }
        if (++load_kt == tiles_k) {
            load_kt = 0;
            ++load_j;
        }
    };

    float acc[48], part[48];
    #pragma unroll
    for (int i = 0; i < 48; ++i) acc[i] = part[i] = 0.0f;

    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < steps) load(s);
        wg_copies_commit();
    }

    // This thread's A fragment rows (wgmma m64nNk8 tf32): warp w of the warpgroup holds rows 16w + g and
    // 16w + g + 8, columns t and t + 4 of each k-step of 8; row r is pixel p0 + r of the tile.
    const int r0 = wg * 64 + warp * 16 + g;
    int j = 0, kt = 0, n = 0, p0 = 0, corner0 = 0, corner1 = 0;
    const float* xs = rows_f;
    for (int step = 0; step < steps; ++step) {
        const int stage = step % STAGES;
        wg_copies_wait<STAGES - 2>();  // this thread's copies of this step (and of its tile's rows) have landed
        wg_fence_proxy();
        __syncthreads();  // everyone's have; and everyone is done with the stage the next load overwrites
        if (kt == 0) {  // a new tile: where this thread's two pixels' windows start in its row buffer
            int oh0, nt;
            locate(j, n, p0, oh0, nt);
            xs = rows_f + (j & 1) * XS;
            const int p = p0 + r0, q = p + 8;
            const int oh = p / (int)OW, oh8 = q / (int)OW;
            corner0 = p < P ? (oh - oh0) * (int)SH * xw + (p - oh * (int)OW) * (int)SW : 0;
            corner1 = q < P ? (oh8 - oh0) * (int)SH * xw + (q - oh8 * (int)OW) * (int)SW : 0;
        }

        unsigned a_hi[4][4], a_lo[4][4];
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int k = kt * CW_BK + 8 * s + t, o0 = taps[k], o1 = taps[k + 4];
            const float v[4] = {o0 >= 0 ? xs[corner0 + o0] : 0.0f, o0 >= 0 ? xs[corner1 + o0] : 0.0f,
                                o1 >= 0 ? xs[corner0 + o1] : 0.0f, o1 >= 0 ? xs[corner1 + o1] : 0.0f};
            wg_split(v, a_hi[s], a_lo[s]);
        }
        const unsigned hi = ring + stage * CW_STAGE_BYTES, lo = hi + CW_B_BYTES;
        #pragma unroll
        for (int h = 0; h < 4 / FLUSH; ++h) {
            wg_mma_3xtf32<FLUSH>(part, a_hi, a_lo, hi, lo, h);
            if (h == 0) {  // the next step's copies run under this step's tensor-core work
                const int next = step + STAGES - 1;
                if (next < steps) load(next % STAGES);
                wg_copies_commit();
            }
            wg_wait_all();
            wg_accumulate(acc, part);
        }
        if (++kt < tiles_k) continue;

        // The tile is done. Accumulator layout (m64nNk8, f32): acc[4c + 2h + v] is row 16w + g + 8h, column
        // 8c + 2t + v. A warp's stores of one (c, v) cover 8 neighbouring pixels of 4 channels: 32-byte runs.
        const int n0 = ((int)blockIdx.x + j * (int)gridDim.x) % tiles_n * CW_BN;
        const bool full = n0 + CW_BN <= (int)OC;  // uniform: no per-column test
        float b[24];  // bias of this thread's columns 8c + 2t + v
        #pragma unroll
        for (int c = 0; c < 12; ++c)
            #pragma unroll
            for (int v = 0; v < 2; ++v) {
                const int col = n0 + 8 * c + 2 * t + v;
                b[2 * c + v] = bias != nullptr && (full || col < (int)OC) ? bias[col] : 0.0f;
            }
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int p = p0 + r0 + 8 * h;
            if (p >= P) continue;
            float* out = y + ((i64)n * OC + n0 + 2 * t) * P + p;
            #pragma unroll
            for (int c = 0; c < 12; ++c) {
                #pragma unroll
                for (int v = 0; v < 2; ++v) {
                    if (!full && n0 + 8 * c + 2 * t + v >= (int)OC) continue;
                    float r = acc[4 * c + 2 * h + v] + b[2 * c + v];
                    if (RELU) r = r < 0.0f ? 0.0f : r;
                    out[(8 * c + v) * P] = r;
                }
            }
        }
        #pragma unroll
        for (int i = 0; i < 48; ++i) acc[i] = 0.0f;
        kt = 0;
        ++j;
    }
    wg_copies_wait<0>();
#endif
}
