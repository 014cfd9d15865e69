"""Layer normalization over the trailing dims: statistics in double (two-pass or chunked with
Chan's merge; never E[x^2] - mean^2), mean split into float hi + lo for the subtraction."""

import ast
import textwrap

from . import prelude
from .reading import ReadError, argument, calls, require_whole, submodule
from .recipes import Family, Parts, Recipe, bind
from .sources import kernel_source


def read(shape) -> dict:
    module = submodule(shape, {"LayerNorm"})
    if module:
        require_whole(shape, f"{module}({shape.first_input})", "layernorm")
        # the module and its parameters read from their dicts: self.ln, .weight and .bias each go through
        # nn.Module.__getattr__, about a microsecond a lookup, which a small CPU problem's ~20 µs call
        # cannot hide (docs/BENCHMARKS.md, CPU playbook kernels)
        return {"input": shape.first_input, "module": f"self._modules[{module.split('.', 1)[1]!r}]",
                "normalized": "_norm.normalized_shape", "weight": "_norm._parameters['weight']",
                "bias": "_norm._parameters['bias']", "eps": "_norm.eps"}
    found = calls(shape.forward, {"layer_norm"})
    if not found:
        raise ReadError("could not find nn.LayerNorm or F.layer_norm in Model")
    call = found[0]
    data = argument(call, 0, "input")
    if data not in shape.forward_args:
        raise ReadError(f"the playbook's layernorm kernels take a forward argument directly, not {data!r}")
    require_whole(shape, ast.unparse(call), "layernorm")
    return {"input": data, "normalized": argument(call, 1, "normalized_shape"),
            "weight": argument(call, 2, "weight", "None"), "bias": argument(call, 3, "bias", "None"),
            "eps": argument(call, 4, "eps", "1e-5")}


def forward(facts: dict, launch: str) -> str:
    module = bind("_norm", facts["module"]) if facts.get("module") else ""
    return f"""
{module}{bind('x', facts['input'])}if x.dtype != torch.float32:
    raise TypeError(f"this kernel is written for float32, got {{x.dtype}}")
normalized = {facts['normalized']}
normalized = (normalized,) if isinstance(normalized, int) else tuple(normalized)
n = 1
for size in normalized:
    n *= size
x = x.contiguous()
y = torch.empty_like(x)
rows = x.numel() // max(n, 1)
weight, bias = {facts['weight']}, {facts['bias']}
weight = weight.contiguous() if weight is not None else None
bias = bias.contiguous() if bias is not None else None
eps = float({facts['eps']})
if x.numel():
{textwrap.indent(launch, '    ')}
return y
"""


# -- CPU -----------------------------------------------------------------------------------

# MODE 0: plain two-pass loops. MODE 1: two-pass with SIMD double reductions.
# MODE 2: one read for the statistics: two passes inside each L1-sized chunk, chunks merged with
# Chan's parallel formula. All statistics in double.
_C = kernel_source("layernorm/cpu.c")

# Explicit SIMD (prelude.C_SIMD). ONE_PASS=0: mean, then the mean of squared deviations from it,
# in double vectors (two sweeps over the row, which stays in L2). ONE_PASS=1: one sweep for the
# sums of d = x - x[0] and d^2 in double; shifting by a sample of the row keeps
# var = E[d^2] - E[d]^2 free of cancellation (exact differences at large offsets). ONE_PASS=2:
# the same sums in float vectors over chunks, merged in double.
_C_VEC = kernel_source("layernorm/cpu_vec.c")

_CPU_LAUNCH = "_launch('layernorm', _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), _n(rows), _n(n), _f(eps))"


def _cpu(params):
    flags = ("-fopenmp",) if params["parallel"] else ("-fopenmp-simd",) if params["mode"] else ()
    return Parts(_C, _CPU_LAUNCH, flags=flags)


CPU = (
    Recipe("naive", "Naive loops: two passes for the statistics in double, then normalise",
           "The straightforward translation: per row, the mean as a double sum, then the variance as the mean "
           "of squared deviations from it (two-pass, stable for shifted data), then (x - mean) * rstd * w + b.",
           ({"mode": 0, "parallel": 0, "chunk": 0},), _cpu),
    Recipe("openmp_rows_simd", "OpenMP over rows with SIMD double reductions",
           "Rows are independent: split them across cores. Inside a row, let the compiler vectorise the double "
           "sums (`omp simd reduction`) and the output pass, which subtracts the mean as a float hi + lo pair so "
           "no precision is lost at large offsets.",
           ({"mode": 1, "parallel": 1, "chunk": 0}, {"mode": 1, "parallel": 0, "chunk": 0}), _cpu),
    Recipe("chunked_chan", "One read for the statistics: two-pass inside L1-sized chunks, merged with Chan's formula",
           "Long rows do not fit in cache, so a plain two-pass reads them twice from memory. Compute mean and "
           "squared deviations per chunk while it is in L1, then merge the chunks' (count, mean, M2) with Chan's "
           "parallel-variance formula in double: as stable as two-pass, one sweep over memory for the statistics.",
           ({"mode": 2, "parallel": 1, "chunk": 1024}, {"mode": 2, "parallel": 1, "chunk": 8192}), _cpu),
    Recipe("explicit_simd", "Explicit SIMD vectors: double-vector statistics, one fused normalise-scale-shift pass",
           "Write the vectors out (GCC vector types as wide as the host's registers: AVX-512, AVX2 or SSE at "
           "compile time) instead of hoping the double reductions auto-vectorise: floats widen to double vectors "
           "for the sums, and the output pass is one sweep of (x - mean_hi - mean_lo) * rstd * w + b. The row "
           "stays in L2. Variants: one pass over d = x - x[0] for the sum and the sum of squares (shifting by a "
           "sample of the row removes the cancellation of E[d^2] - E[d]^2 and makes the differences exact at "
           "large offsets), summed in float vectors over chunks of 1024 values and merged in double (without and "
           "with prefetching the next row while writing this one), or summed in double throughout; or "
           "two-pass statistics (mean, then squared deviations) in double.",
           ({"one_pass": 2, "prefetch": 0}, {"one_pass": 2, "prefetch": 1}, {"one_pass": 1, "prefetch": 0},
            {"one_pass": 0, "prefetch": 0}),
           lambda params: Parts(prelude.C_SIMD + _C_VEC, _CPU_LAUNCH)),
)

# -- CUDA ----------------------------------------------------------------------------------

_CU_ROW = kernel_source("layernorm/row.cu")

# Rows split into chunks of CH = THREADS * ITEMS values; block b handles chunk b / rows of row
# b % rows (neighbouring blocks share the weight chunk in L2). Each thread keeps its ITEMS values
# in registers for the in-chunk second pass.
_CU_CHUNKED = kernel_source("layernorm/chunked.cu")

_CU_CHUNKED_LAUNCH = '''
chunk = {threads} * {items}
chunks = (n + chunk - 1) // chunk
aligned = [t.data_ptr() % 16 == 0 for t in (x, y, weight, bias) if t is not None]
vec = cupy.int32({vec} and n % 4 == 0 and all(aligned))
part = torch.empty(rows * chunks * 2, dtype=torch.float64, device=x.device)
stat = torch.empty(rows * 2, dtype=torch.float64, device=x.device)
_launch('ln_chunk_stats', (rows * chunks,), ({threads},), _ptr(x), _ptr(part), _n(rows), _n(n), _n(chunks), vec)
_launch('ln_merge', (rows,), (256,), _ptr(part), _ptr(stat), _n(n), _n(chunks), _f(eps))
_launch('ln_normalize', (rows * chunks,), ({threads},), _ptr(x), _ptr(weight), _ptr(bias), _ptr(stat), _ptr(y),
        _n(rows), _n(n), vec)
'''


# A persistent grid walking the rows together: each block's part of a row in registers, a grid-wide
# barrier between the chunk statistics and the normalise, the next row's part loading meanwhile.
_CU_PERSISTENT = kernel_source("layernorm/persistent.cu")


def _cuda_persistent(params):
    threads, per, occupancy = params["threads"], params["per"], params["occupancy"]
    capacity, shared = threads * per * 4, threads * per * 16
    launch = f"""
blocks = min(_SMS * {occupancy}, -(-n // {4 * threads}))
chunk = -(-n // blocks)
chunk += -chunk % 4
blocks = -(-n // chunk)  # no block without columns
aligned = all(t.data_ptr() % 16 == 0 for t in (x, y, weight, bias) if t is not None)
if n % 4 or chunk > {capacity} or not aligned:
    raise ValueError(f'this kernel splits a row of float32 values, a multiple of 4 and 16-byte aligned, over at '
                     f'most {{_SMS * {occupancy}}} blocks of {capacity} values; got rows of {{n}}')
sync = _SYNC.get(x.device)
if sync is None:  # the barrier's counters, zeroed once; each launch leaves them at zero
    sync = _SYNC[x.device] = torch.empty(2, dtype=torch.int32, device=x.device)
    _launch('ln_sync_reset', (1,), (1,), _ptr(sync))
part = torch.empty(4 * blocks, dtype=torch.float64, device=x.device)
_launch('ln_persistent', (blocks,), ({threads},), _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), _ptr(part), _ptr(sync),
        _n(rows), _n(n), _n(chunk), _f(eps), shared={shared})
"""
    setup = (f"_kernels['ln_persistent'].max_dynamic_shared_size_bytes = {shared}\n"
             "_SMS = cupy.cuda.Device().attributes['MultiProcessorCount']\n"
             "_SYNC = {}\n")
    return Parts(_CU_PERSISTENT, launch, kernels=("ln_persistent", "ln_sync_reset"), setup=setup)


def _cuda_row(params):
    launch = (f"_launch('ln_rows', (rows,), ({params['block']},), _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), "
              "_n(rows), _n(n), _f(eps))")
    return Parts(_CU_ROW, launch, kernels=("ln_rows",))


def _cuda_chunked(params):
    launch = _CU_CHUNKED_LAUNCH.format(**params)
    return Parts(_CU_CHUNKED, launch, kernels=("ln_chunk_stats", "ln_merge", "ln_normalize"))


def _c(threads, items, vec=1, reverse=0):
    return {"threads": threads, "items": items, "vec": vec, "reverse": reverse}


CUDA = (
    Recipe("block_per_row", "One block per row, two-pass statistics in double, then normalise",
           "The straightforward kernel: a block per row sums the row in double for the mean, then the squared "
           "deviations for the variance, then writes the normalised row. Three reads of x; with few, long rows "
           "most of the GPU idles.",
           ({"block": 1024}, {"block": 512}), _cuda_row),
    Recipe("split_rows_float4", "Split each row across many blocks: chunk statistics in registers, Chan merge, "
           "float4 normalise",
           "Few long rows leave most SMs idle with a block per row. Cut every row into chunks of THREADS x ITEMS "
           "values, one block each: the chunk stays in registers for an exact two-pass mean and M2, a tiny kernel "
           "merges the chunks per row with Chan's formula in double, and a third kernel normalises with 128-bit "
           "loads and streaming stores. x is read twice from HBM, never three times.",
           (_c(256, 32), _c(256, 16), _c(512, 16), _c(1024, 8)), _cuda_chunked),
    Recipe("l2_reverse_order", "Normalise in reverse block order so the last chunks read are still in L2",
           "The statistics pass ends with the last chunks of x in L2 (tens of MB); running the normalise pass's "
           "blocks in reverse order re-reads those first, from cache, before they are evicted.",
           (_c(256, 16, reverse=1), _c(512, 16, reverse=1)), _cuda_chunked),
    Recipe("split_rows_scalar", "Split rows across blocks with scalar loads",
           "The chunked statistics and Chan merge with 32-bit loads: for rows whose length or alignment rules out "
           "float4.",
           (_c(256, 16, vec=0), _c(512, 8, vec=0)), _cuda_chunked),
    Recipe("persistent_grid_barrier", "One persistent grid walks the rows: chunk in registers, a grid-wide barrier, "
           "the next row loading meanwhile",
           "Split rows still read x twice, and x is far larger than L2. Launch one block per SM (or two) for the "
           "whole tensor and walk the rows together: each block keeps its part of the current row in registers, "
           "reduces it to (mean, M2), and waits at a grid-wide barrier (an atomic counter) for the other blocks' "
           "pairs, which every block then merges with Chan's formula in double before writing its part from "
           "registers. The next row's part streams into shared memory with cp.async as soon as this row's is in "
           "registers, so HBM stays busy through the barrier: one read of x, one write of y. x's loads and y's stores "
           "are marked evict-first in L2, so the weight and bias that every row reads again stay there. Variants: "
           "512 threads x 16 float4 or 1024 x 8, with the hint, and 1024 x 8 without it.",
           ({"threads": 512, "per": 16, "occupancy": 1, "stream": 1}, {"threads": 1024, "per": 8, "occupancy": 1, "stream": 1},
            {"threads": 1024, "per": 8, "occupancy": 1, "stream": 0}),
           _cuda_persistent),
)

FAMILIES = (Family("layernorm", read, forward, {"cpu": CPU, "cuda": CUDA}),)
