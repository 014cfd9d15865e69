// 3xTF32 on Hopper's warpgroup tensor cores (wgmma, sm_90a only). Two kernels:
//  mm_split_bt: B (K x N, row-major) -> Bt_hi, Bt_lo (Np x Kp, K-major: wgmma reads TF32 B only K-major),
//    hi = tf32(b), lo = tf32(b - hi), zero-padded to Np = 128-multiple columns and Kp = 32-multiple k.
//  mm_wgmma_tf32x3: a 128 x 128 tile of C per block of 256 threads (two warpgroups of 64 x 128). Per 32-deep
//    k-tile, cp.async brings A (raw fp32, padded rows), Bt_hi and Bt_lo (128B-swizzled rows, as wgmma's
//    descriptors read them) into a STAGES-deep ring in shared memory. Each thread reads its A fragments and
//    splits them into TF32 hi/lo in registers; wgmma m64n128k8 (A from registers, B from shared memory) sums
//    lo*hi + hi*lo + hi*hi of FLUSH k-steps from zero, then the partial is added to the fp32 accumulators with
//    an ordinary FADD: tensor cores round their accumulation toward zero, a bias that must not build up over K.
// Needs K % 4 == 0 and 16-byte aligned A and C (forward checks, falling back to mm_tiled otherwise).
// The wg_* helpers are in common/wgmma.cuh.
#define WG_BM 128
#define WG_BN 128
#define WG_BK 32
#define WG_A_STRIDE 36  // floats per A row in shared memory: fragment reads hit 32 distinct banks
#define WG_B_BYTES (WG_BN * WG_BK * 4)
#define WG_A_BYTES (WG_BM * WG_A_STRIDE * 4)
#define WG_STAGE_BYTES (2 * WG_B_BYTES + WG_A_BYTES)  // 51200, a multiple of the 1024-byte swizzle pattern
#define WG_SMEM (STAGES * WG_STAGE_BYTES + 1024)      // + room to align the ring to 1024 bytes

extern "C" __global__ void __launch_bounds__(256) mm_split_bt(const float* __restrict__ B, float* __restrict__ bt,
                                                              i64 K, i64 N, i64 Kp, i64 Np, i64 sb, i64 lo_offset) {
    __shared__ float tile[32][33];
    const int tx = threadIdx.x, ty = threadIdx.y;  // 32 x 8
    const i64 k0 = (i64)blockIdx.x * 32, n0 = (i64)blockIdx.y * 32;
    B += blockIdx.z * sb;
    float* hi = bt + blockIdx.z * Np * Kp;
    float* lo = hi + lo_offset;
    #pragma unroll
    for (int j = ty; j < 32; j += 8) {
        const i64 k = k0 + j, n = n0 + tx;
        tile[j][tx] = (k < K && n < N) ? __ldg(B + k * N + n) : 0.0f;
    }
    __syncthreads();
    #pragma unroll
    for (int j = ty; j < 32; j += 8) {
        const float x = tile[tx][j];  // k = k0 + tx, n = n0 + j
        const unsigned big = wg_tf32(x);
        const i64 o = (n0 + j) * Kp + k0 + tx;
        hi[o] = __uint_as_float(big);
        lo[o] = __uint_as_float(wg_tf32(x - __uint_as_float(big)));
    }
}

extern "C" __global__ void __launch_bounds__(256, 1)
    mm_wgmma_tf32x3(const float* __restrict__ A, const float* __restrict__ bt, float* __restrict__ C, i64 M, i64 N,
                    i64 K, i64 Kp, i64 Np, i64 sa, i64 sc, i64 lo_offset) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char wg_raw[];
    const unsigned raw = (unsigned)__cvta_generic_to_shared(wg_raw);
    const unsigned ring = (raw + 1023u) & ~1023u;
    const float* ring_f = reinterpret_cast<const float*>(wg_raw + (ring - raw));
    const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, t = lane & 3;

    // Tiles in groups of GROUP_M block-rows, column by column, so the blocks in flight share B and A in L2.
    const i64 tiles_m = (M + WG_BM - 1) / WG_BM, tiles_n = Np / WG_BN, per_group = GROUP_M * tiles_n;
    const i64 bid = blockIdx.x, first_m = (bid / per_group) * GROUP_M;
    const i64 rows = min(tiles_m - first_m, (i64)GROUP_M);
    const i64 m0 = (first_m + (bid % per_group) % rows) * WG_BM, n0 = ((bid % per_group) / rows) * WG_BN;

    A += blockIdx.z * sa;
    C += blockIdx.z * sc;
    const float* b_hi = bt + blockIdx.z * Np * Kp + n0 * Kp;
    const float* b_lo = b_hi + lo_offset;
    const int tiles_k = (int)(Kp / WG_BK);

    // Stage s at ring + s * WG_STAGE_BYTES: [Bt_hi 128 rows x 128 B][Bt_lo, same][A 128 rows x WG_A_STRIDE floats].
    // A thread copies 16-byte chunks e = tid + 256 u (u < 4) of each: row e / 8, chunk e % 8; in the B tiles the
    // chunk sits at (chunk ^ row % 8), the 128-byte swizzle the descriptors name.
    auto load = [&](int stage, int kt) {
        const unsigned base = ring + stage * WG_STAGE_BYTES;
        const i64 k0 = (i64)kt * WG_BK;
        #pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int e = tid + u * 256, r = e >> 3, c = e & 7;
            const unsigned swizzled = r * 128 + ((c ^ (r & 7)) << 4);
            wg_copy16(base + swizzled, b_hi + r * Kp + k0 + c * 4, 16);
            wg_copy16(base + WG_B_BYTES + swizzled, b_lo + r * Kp + k0 + c * 4, 16);
            const i64 gm = m0 + r, gk = k0 + c * 4;
            const bool inside = gm < M && gk < K;
            wg_copy16(base + 2 * WG_B_BYTES + r * (WG_A_STRIDE * 4) + c * 16, inside ? A + gm * K + gk : A,
                      inside ? 16 : 0);
        }
    };

    float acc[64], part[64];
    #pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = part[i] = 0.0f;

    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles_k) load(s, s);
        wg_copies_commit();
    }
    // This thread's A fragment rows (wgmma m64nNk8 tf32): warp w of the warpgroup holds rows 16w + g and
    // 16w + g + 8, columns t and t + 4 of each k-step of 8.
    const float* a_frag = ring_f + 2 * WG_B_BYTES / 4 + (wg * 64 + warp * 16 + g) * WG_A_STRIDE + t;

    for (int kt = 0; kt < tiles_k; ++kt) {
        const int stage = kt % STAGES;
        wg_copies_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
        wg_fence_proxy();
        __syncthreads();  // everyone's have; and everyone is done with the stage the next load overwrites

        const float* as = a_frag + stage * (WG_STAGE_BYTES / 4);
        unsigned a_hi[4][4], a_lo[4][4];
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const float x[4] = {as[8 * s], as[8 * WG_A_STRIDE + 8 * s], as[8 * s + 4], as[8 * WG_A_STRIDE + 8 * s + 4]};
            wg_split(x, a_hi[s], a_lo[s]);
        }
        const unsigned hi = ring + stage * WG_STAGE_BYTES, lo = hi + WG_B_BYTES;
        #pragma unroll
        for (int h = 0; h < 4 / FLUSH; ++h) {
            wg_mma_3xtf32<FLUSH>(part, a_hi, a_lo, hi, lo, h);
            if (h == 0) {  // the next tile's copies run under this tile's tensor-core work
                const int next = kt + STAGES - 1;
                if (next < tiles_k) load(next % STAGES, next);
                wg_copies_commit();
            }
            wg_wait_all();
            wg_accumulate(acc, part);
        }
    }
    wg_copies_wait<0>();

    // Accumulator layout (m64nNk8, f32): acc[4j + 2h + v] is row 16w + g + 8h, column 8j + 2t + v.
    const i64 row0 = m0 + wg * 64 + warp * 16 + g;
    const bool pairs = (N & 1) == 0;
    #pragma unroll
    for (int j = 0; j < 16; ++j) {
        const i64 col = n0 + j * 8 + 2 * t;
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const i64 row = row0 + h * 8;
            if (row >= M) continue;
            float* out = C + row * N + col;
            if (pairs && col + 1 < N) {
                *reinterpret_cast<float2*>(out) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
            } else {
                if (col < N) out[0] = acc[4 * j + 2 * h];
                if (col + 1 < N) out[1] = acc[4 * j + 2 * h + 1];
            }
        }
    }
#endif
}
