"""Matrix multiply, (..., M, K) @ (K, N) or (B, M, K) @ (B, K, N), strict fp32 (no TF32).

The CUDA register-blocked GEMM core here is shared with the implicit-GEMM convolution: its
operand loads and output store are macros (LOAD_A, LOAD_B, STORE_C) each user defines.
"""

import ast
import textwrap

from .reading import ReadError, argument, calls, returned
from .recipes import Family, Parts, Recipe
from .sources import kernel_source


def read(shape) -> dict:
    product = returned(shape)
    if isinstance(product, ast.BinOp) and isinstance(product.op, ast.MatMult):
        operands = ast.unparse(product.left), ast.unparse(product.right)
    elif isinstance(product, ast.Call) and product in calls(product, {"matmul", "mm", "bmm"})[:1]:
        operands = argument(product, 0, "input"), argument(product, 1, "other") or argument(product, 1, "mat2")
    else:  # e.g. torch.triu(A @ B): the kernel would leave out what surrounds the product
        raise ReadError("the playbook's matmul kernels need forward to return a matrix product (@, torch.matmul, "
                        "torch.mm, torch.bmm) as it is, not "
                        f"{ast.unparse(product) if product is not None else 'a forward of several steps'!r}")
    for operand in operands:
        # a transposed argument (KernelBench's A.T @ B) is copied to row-major by the forward below
        name, _, transpose = str(operand).partition(".")
        if name not in shape.forward_args or transpose not in ("", "T", "mT", "t()"):
            raise ReadError("the playbook's matmul kernels take forward arguments directly or transposed, "
                            f"not {operand!r}")
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
_C = kernel_source("matmul/cpu.c")

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
GEMM_CORE = kernel_source("matmul/gemm_core.cuh")

_CU_MATMUL_MACROS = r'''
#define GEMM_NAME mm_tiled
#define GEMM_PARAMS const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, \
                    i64 M, i64 N, i64 K, i64 sa, i64 sb, i64 sc
#define GEMM_SETUP A += blockIdx.z * sa; B += blockIdx.z * sb; C += blockIdx.z * sc;
#define LOAD_A(m, k) __ldg(A + (m) * K + (k))
#define LOAD_B(k, n) __ldg(B + (k) * N + (n))
#define STORE_C(m, n, v) C[(m) * N + (n)] = (v)
'''

_CU_NAIVE = kernel_source("matmul/naive.cu")

# 3xTF32 on tensor cores: each fp32 operand is split into a TF32 "big" part and the TF32 rounding of
# the remainder; big*big + big*small + small*big recovers about 22 bits of each product, so the
# result keeps fp32 accuracy while the multiplies run on mma.sync (m16n8k8, fp32 accumulate).
# Block tile 128 x 128 x XBK (16 or 8), 8 warps of 64 x 32, tiles double-buffered through registers.
# Needs K % 4 == 0 and N % 4 == 0 (float4 loads); forward falls back to mm_tiled otherwise.
_CU_TF32X3 = kernel_source("matmul/tf32x3.cu")


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


# 3xTF32 on Hopper's wgmma (sm_90a): B is split once into TF32 hi/lo parts, transposed to K-major (N x K, what
# wgmma reads for TF32) and zero-padded; a 128 x 128 block of two warpgroups streams 32-deep k-tiles of A and of
# both B parts through a STAGES-deep cp.async ring (B in the 128-byte-swizzled layout of wgmma's shared-memory
# descriptors), splits its A fragments in registers and issues wgmma m64n128k8 for lo*hi + hi*lo + hi*hi. Every
# FLUSH k-steps the tensor-core partial (summed from zero: tensor cores round toward zero) is added to the fp32
# accumulators with FADD. Blocks run in groups of GROUP_M block-rows for L2 reuse. Other GPUs, K % 4 != 0 or
# unaligned operands fall back to mm_tiled.
WGMMA_HELPERS = kernel_source("common/wgmma.cuh")  # also the conv's, as is the module line that gates them
WGMMA_GATE = "_WGMMA = torch.cuda.get_device_capability() == (9, 0)  # wgmma: Hopper (sm_90a) only\n"
_CU_WGMMA = kernel_source("matmul/wgmma_tf32x3.cu")


def _cuda_wgmma(params):
    fallback = gemm_variant(128, 64, 8, 8, 4, 1)
    threads = (fallback["bm"] // fallback["tm"]) * (fallback["bn"] // fallback["tn"])
    shared = params["stages"] * (2 * 128 * 32 * 4 + 128 * 36 * 4) + 1024  # WG_SMEM in the kernel
    launch = f"""
aligned = all(t.data_ptr() % 16 == 0 for t in (a, b, c))
if _WGMMA and K > 0 and K % 4 == 0 and N < 2 ** 21 and batch < 2 ** 16 and aligned:
    Np, Kp = (N + 127) // 128 * 128, (K + 31) // 32 * 32
    bt = torch.empty((2, batch, Np, Kp), dtype=torch.float32, device=a.device)
    _launch('mm_split_bt', (Kp // 32, Np // 32, batch), (32, 8), _ptr(b), _ptr(bt), _n(K), _n(N), _n(Kp), _n(Np),
            _n(sb), _n(batch * Np * Kp))
    _launch('mm_wgmma_tf32x3', ((M + 127) // 128 * (Np // 128), 1, batch), (256,), _ptr(a), _ptr(bt), _ptr(c),
            _n(M), _n(N), _n(K), _n(Kp), _n(Np), _n(sa), _n(sc), _n(batch * Np * Kp), shared={shared})
else:
    _launch('mm_tiled', ((N + 63) // 64, (M + 127) // 128, batch), ({threads},), {_ARGS})"""
    setup = (WGMMA_GATE + "if _WGMMA:\n"
             f"    _kernels['mm_wgmma_tf32x3'].max_dynamic_shared_size_bytes = {shared}\n")
    macros = "".join(f"#define {k.upper()} {v}\n" for k, v in fallback.items())
    return Parts(macros + _CU_MATMUL_MACROS + GEMM_CORE + WGMMA_HELPERS + _CU_WGMMA, launch,
                 kernels=("mm_split_bt", "mm_wgmma_tf32x3", "mm_tiled"), setup=setup, arch_suffix="a")


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
    Recipe("wgmma_tf32x3", "3xTF32 on Hopper warpgroup tensor cores (wgmma), fp32-accurate",
           "On H100/H200 the tensor cores reach their full TF32 rate only through wgmma (warpgroup-wide, "
           "asynchronous, B read from shared memory). Split each operand into a TF32 high part "
           "and the TF32 rounding of the remainder and sum hi*hi + hi*lo + lo*hi, which keeps fp32 accuracy: B is "
           "split and transposed once (wgmma reads TF32 B only K-major), A is split in registers. A 128x128 block of "
           "two warpgroups issues wgmma m64n128k8 from a multi-stage cp.async ring of 32-deep tiles held in the "
           "128-byte-swizzled layout wgmma's descriptors read. Tensor cores round their accumulation toward zero, so "
           "every few k-steps are summed from zero and added to the fp32 total with ordinary adds. Needs sm_90a; "
           "other GPUs fall back to a register-blocked kernel.",
           ({"stages": 4, "flush": 4, "group_m": 8}, {"stages": 4, "flush": 2, "group_m": 8},
            {"stages": 4, "flush": 1, "group_m": 8}, {"stages": 3, "flush": 4, "group_m": 16}),
           _cuda_wgmma),
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
