"""Matrix multiply, (..., M, K) @ (K, N) or (B, M, K) @ (B, K, N), strict fp32 (no TF32).

The CUDA register-blocked GEMM core here is shared with the implicit-GEMM convolution: its
operand loads and output store are macros (LOAD_A, LOAD_B, STORE_C) each user defines.
"""

import ast
import textwrap

from .reading import ReadError, argument, calls
from .recipes import Family, Parts, Recipe


def read(shape) -> dict:
    for node in ast.walk(shape.forward):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            operands = ast.unparse(node.left), ast.unparse(node.right)
            break
    else:
        found = calls(shape.forward, {"matmul", "mm", "bmm"})
        if not found:
            raise ReadError("could not find a matrix product (@, torch.matmul, torch.mm, torch.bmm) in Model.forward")
        operands = argument(found[0], 0, "input"), argument(found[0], 1, "other") or argument(found[0], 1, "mat2")
    for operand in operands:
        if operand not in shape.forward_args:
            raise ReadError(f"the playbook's matmul kernels take forward arguments directly, not {operand!r}")
    return {"a": operands[0], "b": operands[1]}


def forward(facts: dict, launch: str) -> str:
    return f"""
a, b = {facts['a']}, {facts['b']}
if a.dtype != torch.float32 or b.dtype != torch.float32:
    raise TypeError("this kernel is written for float32 operands")
a, b = a.contiguous(), b.contiguous()
if a.dim() >= 2 and b.dim() == 2:
    lead = tuple(a.shape[:-1])
    batch, K, N = 1, a.shape[-1], b.shape[1]
    M = a.numel() // max(K, 1)
    out_shape, sa, sb, sc = (*lead, N), 0, 0, 0
elif a.dim() == 3 and b.dim() == 3 and a.shape[0] == b.shape[0]:
    batch, M, K = a.shape
    N = b.shape[2]
    out_shape, sa, sb, sc = (batch, M, N), M * K, K * N, M * N
else:
    raise ValueError("this kernel multiplies (..., M, K) @ (K, N) or (B, M, K) @ (B, K, N), "
                     f"not {{tuple(a.shape)}} @ {{tuple(b.shape)}}")
if b.shape[-2] != K:
    raise ValueError(f"inner dimensions differ: {{tuple(a.shape)}} @ {{tuple(b.shape)}}")
c = torch.empty(out_shape, dtype=torch.float32, device=a.device)
if c.numel():
{textwrap.indent(launch, '    ')}
return c
"""


# -- CPU -----------------------------------------------------------------------------------

# MODE 0: i-j-k dot products. MODE 1: i-k-j, the inner loop streams a row of B and one of C
# (vectorises). MODE 2: i-k-j over TILE x TILE blocks of k and j so B's block stays in cache.
_C = r'''
static void matmul_one(const float* a, const float* b, float* c, i64 M, i64 N, i64 K) {
#if MODE == 0
    for (i64 i = 0; i < M; ++i)
        for (i64 j = 0; j < N; ++j) {
            float s = 0.0f;
            for (i64 k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
            c[i * N + j] = s;
        }
#else
#if PARALLEL
    #pragma omp parallel for schedule(static)
#endif
    for (i64 i = 0; i < M; ++i) {
        float* cr = c + i * N;
        for (i64 j = 0; j < N; ++j) cr[j] = 0.0f;
#if MODE == 1
        for (i64 k = 0; k < K; ++k) {
            float av = a[i * K + k];
            const float* br = b + k * N;
            for (i64 j = 0; j < N; ++j) cr[j] += av * br[j];
        }
#else
        for (i64 j0 = 0; j0 < N; j0 += TILE) {
            i64 j1 = j0 + TILE < N ? j0 + TILE : N;
            for (i64 k = 0; k < K; ++k) {
                float av = a[i * K + k];
                const float* br = b + k * N;
                for (i64 j = j0; j < j1; ++j) cr[j] += av * br[j];
            }
        }
#endif
    }
#endif
}

void matmul(const float* a, const float* b, float* c, i64 batch, i64 M, i64 N, i64 K, i64 sa, i64 sb, i64 sc) {
    for (i64 z = 0; z < batch; ++z) matmul_one(a + z * sa, b + z * sb, c + z * sc, M, N, K);
}
'''

_CPU_LAUNCH = "_launch('matmul', _ptr(a), _ptr(b), _ptr(c), _n(batch), _n(M), _n(N), _n(K), _n(sa), _n(sb), _n(sc))"


def _cpu(params):
    return Parts(_C, _CPU_LAUNCH, flags=("-fopenmp",) if params.get("parallel") else ())


CPU = (
    Recipe("naive", "Naive triple loop (i, j, k dot products)",
           "The straightforward translation: each output is a dot product of a row of A with a column of B, "
           "read with stride N, so every B access misses the cache line it just used.",
           ({"mode": 0},), _cpu),
    Recipe("ikj_openmp", "Loop interchange to i-k-j with OpenMP over rows of C",
           "Swap the loops so the innermost one walks a row of B and a row of C contiguously: the compiler "
           "vectorises it (-O3 -march=native) into FMA lanes, and the rows of C are split across cores. "
           "Each output still sums over k in order, so rounding matches the naive kernel.",
           ({"mode": 1, "parallel": 1}, {"mode": 1, "parallel": 0}), _cpu),
    Recipe("column_blocking", "Block the columns so a strip of B stays in L1/L2 across k",
           "For wide matrices a full row of C and the rows of B it touches fall out of cache; process C in "
           "column strips of TILE floats so the strip of C stays in L1 while k streams over B's strip.",
           ({"mode": 2, "parallel": 1, "tile": 128}, {"mode": 2, "parallel": 1, "tile": 512}), _cpu),
)

# -- CUDA ----------------------------------------------------------------------------------

# Register-blocked GEMM: a block computes BM x BN of C with (BM/TM)*(BN/TN) threads, each TM x TN
# outputs from BK-deep tiles of A (stored transposed) and B in shared memory. DB=1 double-buffers
# the tiles: the next tile's loads are in flight while the current one is multiplied.
GEMM_CORE = r'''
#define NT ((BM / TM) * (BN / TN))
#define A_PER ((BM * BK + NT - 1) / NT)
#define B_PER ((BK * BN + NT - 1) / NT)

extern "C" __global__ void __launch_bounds__(NT) GEMM_NAME(GEMM_PARAMS) {
    GEMM_SETUP
    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int tid = threadIdx.x, tr = tid / (BN / TN), tc = tid % (BN / TN);
    const i64 m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float ra[A_PER], rb[B_PER];
    const i64 tiles = (K + BK - 1) / BK;

    #define FETCH(k0)                                                                       \
        _Pragma("unroll") for (int u = 0; u < A_PER; ++u) {                                  \
            int e = tid + u * NT, r = e / BK, c = e % BK;                                    \
            i64 gm = m0 + r, gk = (k0) + c;                                                  \
            ra[u] = (e < BM * BK && gm < M && gk < K) ? LOAD_A(gm, gk) : 0.0f;               \
        }                                                                                    \
        _Pragma("unroll") for (int u = 0; u < B_PER; ++u) {                                  \
            int e = tid + u * NT, r = e / BN, c = e % BN;                                    \
            i64 gk = (k0) + r, gn = n0 + c;                                                  \
            rb[u] = (e < BK * BN && gk < K && gn < N) ? LOAD_B(gk, gn) : 0.0f;               \
        }
    #define STASH(buf)                                                                       \
        _Pragma("unroll") for (int u = 0; u < A_PER; ++u) {                                  \
            int e = tid + u * NT;                                                            \
            if (e < BM * BK) As[buf][e % BK][e / BK] = ra[u];                                \
        }                                                                                    \
        _Pragma("unroll") for (int u = 0; u < B_PER; ++u) {                                  \
            int e = tid + u * NT;                                                            \
            if (e < BK * BN) Bs[buf][e / BN][e % BN] = rb[u];                                \
        }

    FETCH(0)
    STASH(0)
    __syncthreads();
    for (i64 t = 0; t < tiles; ++t) {
        const int buf = DB ? (int)(t & 1) : 0;
        if (DB && t + 1 < tiles) { FETCH((t + 1) * BK) }
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[buf][k][tr * TM + i];
            #pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[buf][k][tc * TN + j];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (t + 1 < tiles) {
            if (DB) {
                STASH(buf ^ 1)
            } else {
                __syncthreads();
                FETCH((t + 1) * BK)
                STASH(0)
            }
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        i64 gm = m0 + tr * TM + i;
        if (gm >= M) continue;
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            i64 gn = n0 + tc * TN + j;
            if (gn < N) STORE_C(gm, gn, acc[i][j]);
        }
    }
}
'''

_CU_MATMUL_MACROS = r'''
#define GEMM_NAME mm_tiled
#define GEMM_PARAMS const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, \
                    i64 M, i64 N, i64 K, i64 sa, i64 sb, i64 sc
#define GEMM_SETUP A += blockIdx.z * sa; B += blockIdx.z * sb; C += blockIdx.z * sc;
#define LOAD_A(m, k) __ldg(A + (m) * K + (k))
#define LOAD_B(k, n) __ldg(B + (k) * N + (n))
#define STORE_C(m, n, v) C[(m) * N + (n)] = (v)
'''

_CU_NAIVE = r'''
extern "C" __global__ void mm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                    i64 M, i64 N, i64 K, i64 sa, i64 sb, i64 sc) {
    A += blockIdx.z * sa; B += blockIdx.z * sb; C += blockIdx.z * sc;
    i64 row = (i64)blockIdx.y * blockDim.y + threadIdx.y, col = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float s = 0.0f;
    for (i64 k = 0; k < K; ++k) s = fmaf(A[row * K + k], B[k * N + col], s);
    C[row * N + col] = s;
}

// Square TILE x TILE shared-memory tiles: each A and B element is read from global memory
// N/TILE (resp. M/TILE) times instead of N (resp. M).
extern "C" __global__ void mm_smem(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   i64 M, i64 N, i64 K, i64 sa, i64 sb, i64 sc) {
    A += blockIdx.z * sa; B += blockIdx.z * sb; C += blockIdx.z * sc;
    __shared__ float As[TILE][TILE + 1], Bs[TILE][TILE];
    i64 row = (i64)blockIdx.y * TILE + threadIdx.y, col = (i64)blockIdx.x * TILE + threadIdx.x;
    float s = 0.0f;
    for (i64 k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = row < M && k0 + threadIdx.x < K ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = k0 + threadIdx.y < K && col < N ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) s = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], s);
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = s;
}
'''

# 3xTF32 on tensor cores: each fp32 operand is split into a TF32 "big" part and the TF32 rounding of
# the remainder; big*big + big*small + small*big recovers about 22 bits of each product, so the
# result keeps fp32 accuracy while the multiplies run on mma.sync (m16n8k8, fp32 accumulate).
# Block tile 128 x 128 x XBK (16 or 8), 8 warps of 64 x 32, tiles double-buffered through registers.
# Needs K % 4 == 0 and N % 4 == 0 (float4 loads); forward falls back to mm_tiled otherwise.
_CU_TF32X3 = r"""
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
"""


def _cuda_tf32x3(params):
    fallback = gemm_variant(128, 64, 8, 8, 4, 1)
    threads = (fallback["bm"] // fallback["tm"]) * (fallback["bn"] // fallback["tn"])
    launch = f"""
aligned = all(t.data_ptr() % 16 == 0 for t in (a, b, c))
if K % 4 == 0 and N % 4 == 0 and aligned:
    _launch('mm_tf32x3', ((N + 127) // 128, (M + 127) // 128, batch), (256,), {_ARGS})
else:
    _launch('mm_tiled', ((N + 63) // 64, (M + 127) // 128, batch), ({threads},), {_ARGS})"""
    macros = "".join(f"#define {k.upper()} {v}\n" for k, v in fallback.items())
    return Parts(macros + _CU_MATMUL_MACROS + GEMM_CORE + _CU_TF32X3, launch, kernels=("mm_tf32x3", "mm_tiled"))


_ARGS = "_ptr(a), _ptr(b), _ptr(c), _n(M), _n(N), _n(K), _n(sa), _n(sb), _n(sc)"


def _cuda_simple(params):
    tile, name = params["tile"], params["kernel"]
    grid = f"((N + {tile - 1}) // {tile}, (M + {tile - 1}) // {tile}, batch)"
    launch = f"_launch('{name}', {grid}, ({tile}, {tile}), {_ARGS})"
    return Parts(_CU_NAIVE, launch, kernels=(name,))


def _cuda_gemm(params):
    threads = (params["bm"] // params["tm"]) * (params["bn"] // params["tn"])
    bm, bn = params["bm"], params["bn"]
    grid = f"((N + {bn - 1}) // {bn}, (M + {bm - 1}) // {bm}, batch)"
    launch = f"_launch('mm_tiled', {grid}, ({threads},), {_ARGS})"
    return Parts(_CU_MATMUL_MACROS + GEMM_CORE, launch, kernels=("mm_tiled",))


def gemm_variant(bm, bn, bk, tm, tn, db):
    return {"bm": bm, "bn": bn, "bk": bk, "tm": tm, "tn": tn, "db": db}


CUDA = (
    Recipe("naive", "One thread per output element",
           "The straightforward kernel: each thread computes one C element as a dot product over K, reading A "
           "and B straight from global memory (B coalesced across the warp, A broadcast).",
           ({"kernel": "mm_naive", "tile": 16},), _cuda_simple),
    Recipe("double_buffering", "Double-buffered shared-memory tiles to hide global-load latency",
           "Keep two shared-memory stages: while the warps multiply the current BK slice, the next slice's global "
           "loads are already in flight into registers, then stored into the other stage; one barrier per "
           "slice instead of two.",
           (gemm_variant(128, 128, 8, 8, 8, 1), gemm_variant(128, 128, 16, 8, 8, 1),
            gemm_variant(128, 64, 16, 8, 4, 1)),
           _cuda_gemm),
    Recipe("register_blocking", "2D register blocking: 128x128 block tiles, 8x8 outputs per thread",
           "Raise arithmetic intensity: a block computes a BM x BN tile of C, each thread a TM x TN sub-tile held "
           "in registers; per BK-deep step, the A tile (stored transposed) and the B tile sit in shared memory and "
           "every value loaded into a register feeds TM or TN FMAs. Plain fp32 FMAs: no TF32.",
           (gemm_variant(128, 128, 8, 8, 8, 0), gemm_variant(128, 64, 8, 8, 4, 0), gemm_variant(64, 64, 8, 4, 4, 0)),
           _cuda_gemm),
    Recipe("shared_tiles", "Square shared-memory tiles (classic tiled GEMM)",
           "Stage TILE x TILE blocks of A and B in shared memory so each global value is reused TILE times; one "
           "output per thread.",
           ({"kernel": "mm_smem", "tile": 32}, {"kernel": "mm_smem", "tile": 16}), _cuda_simple),
    Recipe("tf32x3_tensor_cores", "3xTF32 on tensor cores: fp32-accurate split-precision mma.sync",
           "Plain TF32 loses 13 mantissa bits and fails an fp32 tolerance, but splitting each operand into a TF32 "
           "high part and a TF32 remainder and summing three tensor-core products (hi*hi + hi*lo + lo*hi) keeps "
           "about 22 bits per product, at several times the FP32 FMA rate. Tensor cores accumulate with round-toward-"
           "zero, so each k-step's three products are summed from zero and added to the fp32 total outside the "
           "tensor core. 128x128x16 (or x8) block tiles, eight warps of 64x32 issuing mma.sync m16n8k8, "
           "register-staged "
           "double buffering.",
           ({"xbk": 16}, {"xbk": 8}), _cuda_tf32x3),
)

FAMILIES = (Family("matmul", read, forward, {"cpu": CPU, "cuda": CUDA}),)
