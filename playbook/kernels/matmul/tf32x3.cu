#define XBM 128
#define XBN 128
#define A_F4 (XBM * XBK / 4 / 256)
#define B_F4 (XBK * XBN / 4 / 256)
__device__ __forceinline__ unsigned to_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small) {
    big = to_tf32(x);
    small = to_tf32(x - __uint_as_float(big));
}
__device__ __forceinline__ void mma_tf32(float* d, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void __launch_bounds__(256) mm_tf32x3(const float* __restrict__ A, const float* __restrict__ B,
                                                            float* __restrict__ C, i64 M, i64 N, i64 K, i64 sa,
                                                            i64 sb, i64 sc) {
    A += blockIdx.z * sa; B += blockIdx.z * sb; C += blockIdx.z * sc;
    __shared__ __align__(16) float As[2][XBM][XBK + 4];
    __shared__ __align__(16) float Bs[2][XBK][XBN + 8];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
    const i64 m0 = (i64)blockIdx.y * XBM, n0 = (i64)blockIdx.x * XBN;
    float acc[4][4][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j)
            #pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
    float4 ra[A_F4], rb[B_F4];
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    auto fetch = [&](i64 k0) {
        #pragma unroll
        for (int u = 0; u < A_F4; ++u) {
            int e = tid + u * 256, ar = e / (XBK / 4), ac = (e % (XBK / 4)) * 4;
            ra[u] = (m0 + ar < M && k0 + ac < K) ? *reinterpret_cast<const float4*>(A + (m0 + ar) * K + k0 + ac) : zero;
        }
        #pragma unroll
        for (int u = 0; u < B_F4; ++u) {
            int e = tid + u * 256, br = e / (XBN / 4), bc = (e % (XBN / 4)) * 4;
            rb[u] = (k0 + br < K && n0 + bc < N) ? *reinterpret_cast<const float4*>(B + (k0 + br) * N + n0 + bc) : zero;
        }
    };
    auto stash = [&](int buf) {
        #pragma unroll
        for (int u = 0; u < A_F4; ++u) {
            int e = tid + u * 256;
            *reinterpret_cast<float4*>(&As[buf][e / (XBK / 4)][(e % (XBK / 4)) * 4]) = ra[u];
        }
        #pragma unroll
        for (int u = 0; u < B_F4; ++u) {
            int e = tid + u * 256;
            *reinterpret_cast<float4*>(&Bs[buf][e / (XBN / 4)][(e % (XBN / 4)) * 4]) = rb[u];
        }
    };
    const i64 tiles = (K + XBK - 1) / XBK;
    fetch(0);
    stash(0);
    __syncthreads();
    for (i64 tile = 0; tile < tiles; ++tile) {
        const int buf = (int)(tile & 1);
        if (tile + 1 < tiles) fetch((tile + 1) * XBK);
        #pragma unroll
        for (int kk = 0; kk < XBK; kk += 8) {
            unsigned ab[4][4], as_[4][4], bb[4][2], bs[4][2];
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                int r = wm + i * 16 + g;
                split_tf32(As[buf][r][kk + t], ab[i][0], as_[i][0]);
                split_tf32(As[buf][r + 8][kk + t], ab[i][1], as_[i][1]);
                split_tf32(As[buf][r][kk + t + 4], ab[i][2], as_[i][2]);
                split_tf32(As[buf][r + 8][kk + t + 4], ab[i][3], as_[i][3]);
            }
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                int c = wn + j * 8 + g;
                split_tf32(Bs[buf][kk + t][c], bb[j][0], bs[j][0]);
                split_tf32(Bs[buf][kk + t + 4][c], bb[j][1], bs[j][1]);
            }
            // Tensor cores round their accumulation toward zero, a bias that grows with K: sum the three
            // products of this k-step from zero inside the mma, then add it to the fp32 total (round to nearest).
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < 4; ++j) {
                    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                    mma_tf32(part, as_[i], bb[j]);
                    mma_tf32(part, ab[i], bs[j]);
                    mma_tf32(part, ab[i], bb[j]);
                    #pragma unroll
                    for (int r = 0; r < 4; ++r) acc[i][j][r] += part[r];
                }
        }
        if (tile + 1 < tiles) stash(buf ^ 1);
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 4; ++j) {
            i64 row = m0 + wm + i * 16 + g, col = n0 + wn + j * 8 + 2 * t;
            if (col >= N) continue;
            if (row < M) *reinterpret_cast<float2*>(C + row * N + col) = make_float2(acc[i][j][0], acc[i][j][1]);
            if (row + 8 < M)
                *reinterpret_cast<float2*>(C + (row + 8) * N + col) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}
