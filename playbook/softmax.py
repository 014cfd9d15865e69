"""Softmax over one dimension: rows are the softmax dimension moved last and made contiguous."""

import ast
import textwrap

from . import prelude
from .reading import ReadError, argument, calls, require_whole, submodule
from .recipes import Family, Parts, Recipe, bind
from .sources import kernel_source


def read(shape) -> dict:
    found = calls(shape.forward, {"softmax"})
    if found:
        call = found[0]
        data, dim = argument(call, 0, "input"), argument(call, 1, "dim")
        require_whole(shape, ast.unparse(call), "softmax")
    else:
        module = submodule(shape, {"Softmax"})
        if module is None:
            raise ReadError("could not find softmax (torch.softmax, F.softmax, x.softmax or nn.Softmax) in Model")
        data, dim = shape.first_input, f"{module}.dim"
        require_whole(shape, f"{module}({data})", "softmax")
    if data not in shape.forward_args:
        raise ReadError(f"the playbook's softmax kernels take a forward argument directly, not {data!r}")
    if dim is None or dim == "None":
        raise ReadError("softmax without an explicit dim is not supported by the playbook")
    return {"input": data, "dim": dim}


def forward(facts: dict, launch: str) -> str:
    return f"""
{bind('x', facts['input'])}if x.dtype != torch.float32:
    raise TypeError(f"this kernel is written for float32, got {{x.dtype}}")
dim = ({facts['dim']}) % x.dim()
last = dim == x.dim() - 1
x = (x if last else x.transpose(dim, -1)).contiguous()
y = torch.empty_like(x)
cols = x.shape[-1]
rows = x.numel() // max(cols, 1)
if x.numel():
{textwrap.indent(launch, '    ')}
return y if last else y.transpose(dim, -1)
"""


# -- CPU -----------------------------------------------------------------------------------

_C_NAIVE = kernel_source("softmax/naive.c")

# Vectorisable passes: max and sum as SIMD reductions, exp as an inline polynomial.
# ONLINE=1 finds max and sum in one sweep, block by block, rescaling the running sum.
_C_FAST = kernel_source("softmax/fast.c")

# Explicit SIMD (prelude.C_SIMD): three passes over a row that stays in L1/L2 (max; exp(x - max)
# stored and summed; scale), UNROLL independent vector accumulators per pass to hide latency.
# The last cols % VL values go through the same vector code on a padded copy.
_C_VEC = kernel_source("softmax/vec.c")

_CPU_LAUNCH = "_launch('softmax', _ptr(x), _ptr(y), _n(rows), _n(cols))"


def _cpu(source: str, flags=("-fopenmp-simd",)):
    return lambda params: Parts(source, _CPU_LAUNCH, flags=("-fopenmp",) if params.get("parallel") else flags)


CPU = (
    Recipe("naive", "Naive loops: three passes per row (max, sum of exponentials, write)",
           "The straightforward translation: for each row find the maximum, sum exp(x - max) in double, then "
           "write exp(x - max) / sum. Scalar libm expf, one thread.",
           ({},), _cpu(_C_NAIVE, ())),
    Recipe("openmp_rows", "OpenMP over rows with SIMD passes and a vectorisable polynomial exp",
           "Rows are independent, so split them across cores with `#pragma omp parallel for`; inside a row the "
           "max and the sum are SIMD reductions and exp is an inline Cody-Waite polynomial (about 2 ulp) that the "
           "compiler vectorises, unlike libm's expf. Variants store the exponentials and rescale them, or "
           "recompute them.",
           ({"parallel": 1, "store_exp": 1, "online": 0, "chunk": 0},
            {"parallel": 1, "store_exp": 0, "online": 0, "chunk": 0}), _cpu(_C_FAST)),
    Recipe("simd_passes", "Vectorised passes with -O3 auto-vectorisation and an inline polynomial exp",
           "Keep one thread but make every pass vectorise: SIMD reductions for the max and the sum (allowed "
           "by `#pragma omp simd reduction`, which licenses the reordering) and a branch-free polynomial exp. "
           "Variants store the exponentials in the output during the sum pass, or recompute them while writing.",
           ({"parallel": 0, "store_exp": 1, "online": 0, "chunk": 0},
            {"parallel": 0, "store_exp": 0, "online": 0, "chunk": 0}), _cpu(_C_FAST)),
    Recipe("online", "Single-pass online softmax: max and sum together, block by block",
           "Read each row once for its statistics: per block of CHUNK values take the block max, rescale the "
           "running sum by exp(old max - new max) when the max grows, and add the block's exponentials, which "
           "are also stored; then one rescaling pass. Saves a full read of the row when rows exceed the cache.",
           ({"parallel": 1, "store_exp": 1, "online": 1, "chunk": 256},
            {"parallel": 1, "store_exp": 1, "online": 1, "chunk": 2048}), _cpu(_C_FAST)),
    Recipe("explicit_simd", "Explicit SIMD vectors: three in-cache passes with a vector polynomial exp",
           "Auto-vectorisation of the polynomial exp is fragile (the compiler may keep a scalar path hot), so "
           "write the vectors out: GCC vector types as wide as the host's registers (AVX-512, AVX2 or SSE, "
           "chosen at compile time), exp by range reduction to 2^k * p(r) with k rounded by the 1.5 * 2^23 trick "
           "and 2^k built in the exponent bits. A 16 KB row stays in L1 across its three passes (max, store and "
           "sum the exponentials, scale). Variants keep two or four independent accumulators per pass; a third "
           "puts the exponentials in a scratch row and writes the output with non-temporal stores.",
           ({"unroll": 2, "stream": 0}, {"unroll": 4, "stream": 0}, {"unroll": 2, "stream": 8192}),
           lambda params: Parts(prelude.C_SIMD + _C_VEC, _CPU_LAUNCH)),
)

# -- CUDA ----------------------------------------------------------------------------------

_CU_THREE_PASS = kernel_source("softmax/three_pass.cu")

# Online statistics (running max m and sum s of exp(x - m)), merged across threads.
# WARP_ROWS=1: a warp owns a row; else the block does. STAGE floats of the row are kept in
# shared memory for the write pass; STREAM marks the output (and the last read) as streaming.
_CU_ONLINE = kernel_source("softmax/online.cu")

# A persistent grid of clusters, each taking rows from a counter and keeping the next STAGES
# slices in flight (cp.async) while it reduces and writes a row: one read and one write of HBM.
_CU_PIPELINED = kernel_source("softmax/pipelined.cu")


def _cuda_three_pass(params):
    launch = "_launch('softmax_rows', (rows,), (BLOCK,), _ptr(x), _ptr(y), _n(rows), _n(cols))"
    return Parts(_CU_THREE_PASS, launch.replace("BLOCK", str(params["block"])), kernels=("softmax_rows",))


def _cuda_online(params):
    block, warp_rows, stage = params["block"], params["warp_rows"], params["stage"]
    grid = f"(rows + {block // 32 - 1}) // {block // 32}" if warp_rows else "rows"
    vec = "int(cols % 4 == 0 and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0)"
    if not params["vec"]:
        vec = "0"
    launch = (f"_launch('softmax_online', ({grid},), ({block},), _ptr(x), _ptr(y), _n(rows), _n(cols), "
              f"cupy.int32({vec}), shared={stage * 4})")
    # shared memory beyond 48 KB per block must be opted into, once per kernel
    setup = ("_kernels['softmax_online'].max_dynamic_shared_size_bytes = "
             f"{stage * 4}\n" if stage * 4 > 48 * 1024 else "")
    return Parts(_CU_ONLINE, launch, kernels=("softmax_online",), setup=setup)


def _cuda_cluster(params):
    cluster, block, per = params["cluster"], params["block"], params["per"]
    capacity = cluster * block * per * 4
    launch = (f"if cols % {4 * cluster} or cols > {capacity} or x.data_ptr() % 16 or y.data_ptr() % 16:\n"
              f"    raise ValueError(f'this kernel splits a row of up to {capacity} float32 values, a multiple of "
              f"{4 * cluster}, 16-byte aligned, over {cluster} blocks; got {{cols}}')\n"
              f"_launch('softmax_cluster', (rows * {cluster},), ({block},), _ptr(x), _ptr(y), _n(rows), _n(cols))")
    return Parts(_CU_ONLINE, launch, kernels=("softmax_cluster",))


def _cuda_pipelined(params):
    ctas, threads, per, stages = params["ctas"], params["threads"], params["per"], params["stages"]
    capacity, shared = ctas * threads * per * 4, stages * threads * per * 16
    launch = (f"if cols % {4 * ctas} or cols > {capacity} or rows >= 2 ** 31 or x.data_ptr() % 16 or y.data_ptr() % 16:\n"
              f"    raise ValueError(f'this kernel splits a row of up to {capacity} float32 values, a multiple of "
              f"{4 * ctas}, 16-byte aligned, over {ctas} blocks; got {{cols}}')\n"
              "work = _WORK.get(x.device)\n"
              "if work is None:  # the row counter, zeroed once; each launch leaves it at zero\n"
              "    work = _WORK[x.device] = torch.empty(2, dtype=torch.int32, device=x.device)\n"
              "    _launch('softmax_work_reset', (1,), (1,), _ptr(work))\n"
              f"clusters = min(rows, _SMS * {params['occupancy']} // {ctas})\n"
              f"_launch('softmax_pipelined', (clusters * {ctas},), ({threads},), _ptr(x), _ptr(y), _n(rows), _n(cols), "
              f"_ptr(work), shared={shared})")
    setup = (f"_kernels['softmax_pipelined'].max_dynamic_shared_size_bytes = {shared}\n"
             "_SMS = cupy.cuda.Device().attributes['MultiProcessorCount']\n"
             "_WORK = {}\n")
    return Parts(_CU_ONLINE + _CU_PIPELINED, launch, kernels=("softmax_pipelined", "softmax_work_reset"), setup=setup)


def _v(block, warp_rows=0, stage=0, stream=0, vec=1, reverse=0):
    return {"block": block, "warp_rows": warp_rows, "stage": stage, "stream": stream, "vec": vec, "reverse": reverse}


CUDA = (
    Recipe("block_three_pass", "One block per row, three passes with shared-memory tree reductions",
           "The straightforward kernel: a block per row; threads stride over the row for the maximum, reduce it "
           "through shared memory, then the sum of exp(x - max), then write the normalised values. Reads each "
           "row three times.",
           ({"block": 256}, {"block": 512}, {"block": 1024}), _cuda_three_pass),
    Recipe("pipelined_clusters", "Persistent clusters that hold each row once and load the next rows while writing",
           "Reading the row twice costs a third of the traffic, and holding it once in a cluster (below) left "
           "the memory idle while each block waited on its barriers. Make the grid persistent: a cluster of "
           "blocks owns one row at a time, taking rows from a counter in global memory, and every block keeps "
           "the slices of its next rows in flight in shared memory (cp.async) while it reduces and writes the "
           "current one from registers: a slice's buffer is refilled as soon as the slice is in registers. One "
           "cluster barrier per row, after which every warp merges the cluster's per-warp (max, sum) pairs "
           "from distributed shared memory itself; exp is taken once per value. Variants trade buffers per "
           "block (STAGES) for blocks per multiprocessor (OCCUPANCY).",
           ({"ctas": 8, "threads": 256, "per": 8, "stages": 1, "occupancy": 4},
            {"ctas": 8, "threads": 256, "per": 8, "stages": 2, "occupancy": 3},
            {"ctas": 8, "threads": 128, "per": 16, "stages": 2, "occupancy": 3},
            {"ctas": 8, "threads": 256, "per": 8, "stages": 3, "occupancy": 2}), _cuda_pipelined),
    Recipe("reverse_write_pass", "Walk the write pass backwards so the re-read of the row comes from L2",
           "After the statistics pass, the end of each row is what was read last and is still in L2, while its "
           "start has likely been evicted by the other rows in flight. Writing the row from its end backwards "
           "turns part of the second read of x into L2 hits, closing in on one read and one write of HBM.",
           (_v(1024, stream=1, reverse=1), _v(512, stream=1, reverse=1), _v(1024, stage=32768, stream=1, reverse=1)),
           _cuda_online),
    Recipe("online_float4", "Online softmax with float4 vectorized loads and stores",
           "One pass computes the running max and the sum of exponentials together (rescaling the sum when the max "
           "grows), merged across lanes with warp shuffles and across warps through shared memory; the second "
           "pass writes. Loads and stores are 128-bit (float4) when the row allows it, and the streaming variants "
           "mark the output evict-first so the re-read of x stays in L2.",
           (_v(1024, stream=1), _v(512, stream=1), _v(1024), _v(256)), _cuda_online),
    Recipe("stage_in_shared", "Keep the row's head in shared memory so the write pass re-reads only the tail",
           "Reading a row twice from HBM costs a third of the traffic. While computing the statistics, the block "
           "also keeps the first STAGE values of its row in (opt-in, up to ~200 KB) shared memory, and the write "
           "pass takes them from there; only the rest is re-read, mostly from L2.",
           (_v(1024, stage=49152, stream=1), _v(1024, stage=32768, stream=1), _v(512, stage=16384, stream=1)),
           _cuda_online),
    Recipe("cluster_row", "Split each row over a thread-block cluster and merge the statistics in distributed "
           "shared memory",
           "A 65536-float row (256 KB) fits in no single block's registers or shared memory, so the kernels above "
           "read it twice. A Hopper cluster of 2 to 8 blocks can hold it: each block loads its slice into "
           "registers once (PER float4 a thread, streaming loads), reduces its own running max and sum, and the "
           "blocks merge their pairs by reading each other's shared memory (mapa / ld.shared::cluster between "
           "two cluster barriers); then each block writes its slice from the registers. One read and one write "
           "of HBM.",
           ({"cluster": 4, "block": 512, "per": 8, "min_blocks": 2},
            {"cluster": 8, "block": 256, "per": 8, "min_blocks": 4},
            {"cluster": 2, "block": 1024, "per": 8, "min_blocks": 1}), _cuda_cluster),
    Recipe("warp_per_row", "One warp per row with shuffle reductions",
           "Give each row to a single warp: statistics merge with __shfl_xor_sync only, with no shared memory and "
           "no __syncthreads, and several rows share a block. Best when rows are short or many.",
           (_v(256, warp_rows=1), _v(128, warp_rows=1)), _cuda_online),
    Recipe("online_scalar", "Online softmax with scalar loads",
           "The single-pass statistics of online softmax without vector loads, for rows whose length or alignment "
           "rules out float4.",
           (_v(512, vec=0), _v(1024, vec=0)), _cuda_online),
)

FAMILIES = (Family("softmax", read, forward, {"cpu": CPU, "cuda": CUDA}),)
