"""Reductions over one dimension (sum, mean, prod, amax/amin, max/min values): the input is
seen as (outer, R, inner) with the reduced dim in the middle. Sums accumulate in double."""

import ast
import textwrap

from .reading import ReadError, argument, calls, require_whole
from .recipes import Family, Parts, Recipe, bind
from .sources import kernel_source

_OPS = {"sum", "mean", "prod", "amax", "amin", "max", "min"}

# op -> accumulator type, identity, combine(a, b), final(a, r)
_ALGEBRA = {
    "sum": ("double", "0.0", "((a) + (b))", "(a)"),
    "mean": ("double", "0.0", "((a) + (b))", "((a) / (double)(r))"),
    "prod": ("double", "1.0", "((a) * (b))", "(a)"),
    "max": ("float", "NEG_INF", "(((b) > (a) || (b) != (b)) ? (b) : (a))", "(a)"),
    "min": ("float", "(-NEG_INF)", "(((b) < (a) || (b) != (b)) ? (b) : (a))", "(a)"),
}


def read(shape) -> dict:
    found = calls(shape.forward, _OPS)
    if not found:
        raise ReadError("could not find a reduction (sum, mean, prod, amax, amin, max, min) in Model.forward")
    call = found[0]
    name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
    data = argument(call, 0, "input")
    if data not in shape.forward_args:
        raise ReadError(f"the playbook's reduction kernels take a forward argument directly, not {data!r}")
    dim = argument(call, 1, "dim", "None")
    keepdim = argument(call, 2, "keepdim", "False")
    if name in {"max", "min"}:
        if dim == "None":
            raise ReadError(f"torch.{name} without dim is not supported by the playbook; use amax/amin")
        parent = _parent(shape.forward, call)
        indexed = (isinstance(parent, ast.Subscript) and ast.unparse(parent.slice) == "0") or (
            isinstance(parent, ast.Attribute) and parent.attr == "values")
        if not indexed:
            raise ReadError(f"torch.{name}(x, dim) returns values and indices; the playbook computes values only")
    require_whole(shape, ast.unparse(call), "reduction", ("[0]", ".values") if name in {"max", "min"} else ())
    op = {"amax": "max", "amin": "min"}.get(name, name)
    return {"input": data, "dim": dim, "keepdim": keepdim, "op": op}


def _parent(tree, child):
    for node in ast.walk(tree):
        for inner in ast.iter_child_nodes(node):
            if inner is child:
                return node
    return None


def device_code(facts: dict) -> str:
    acc, identity, combine, final = _ALGEBRA[facts["op"]]
    return (f"typedef {acc} acc_t;\n#define IDENTITY ((acc_t){identity})\n"
            f"#define COMBINE(a, b) {combine}\n#define FINAL(a, r) ((float){final})\n")


def forward(facts: dict, launch: str) -> str:
    return f"""
{bind('x', facts['input'])}if x.dtype != torch.float32:
    raise TypeError(f"this kernel is written for float32, got {{x.dtype}}")
x = x.contiguous()
dim, keepdim = {facts['dim']}, bool({facts['keepdim']})
if isinstance(dim, (tuple, list)):
    if len(dim) != 1:
        raise ValueError("this kernel reduces over one dimension or all of them")
    dim = dim[0]
if dim is None:
    outer, r, inner = 1, x.numel(), 1
    out_shape = (1,) * x.dim() if keepdim else ()
else:
    dim = dim % max(x.dim(), 1)
    outer, r, inner = 1, x.shape[dim], 1
    for size in x.shape[:dim]:
        outer *= size
    for size in x.shape[dim + 1:]:
        inner *= size
    out_shape = tuple(x.shape[:dim]) + ((1,) if keepdim else ()) + tuple(x.shape[dim + 1:])
y = torch.empty(out_shape, dtype=torch.float32, device=x.device)
if y.numel():
{textwrap.indent(launch, '    ')}
return y
"""


# -- CPU -----------------------------------------------------------------------------------

# MODE 0: one output at a time, walking R with stride `inner`. MODE 1: stream the (R, inner) slab
# row by row into a vector of `inner` accumulators (contiguous, vectorisable).
_C = kernel_source("reduction/cpu.c")


def _cpu(params):
    return Parts(_C, "_launch('reduce', _ptr(x), _ptr(y), _n(outer), _n(r), _n(inner))",
                 flags=("-fopenmp",) if params["mode"] else ())


CPU = (
    Recipe("naive", "Naive loops: one output at a time, strided walk over the reduced dim",
           "The straightforward translation: for each output, walk the reduced dimension (stride = product of "
           "the trailing dims) and combine in double.",
           ({"mode": 0, "parallel": 0},), _cpu),
    Recipe("streamed_rows_openmp", "Stream contiguous rows into a vector of accumulators, OpenMP over the outer dim",
           "Reorder the loops so memory is read in order: for each outer index keep one accumulator per trailing "
           "position and add whole contiguous rows into them (vectorised); split the outer dimension across cores. "
           "Last-dimension reductions use eight independent partial sums instead of one serial chain.",
           ({"mode": 1, "parallel": 1}, {"mode": 1, "parallel": 0}), _cpu),
)

# -- CUDA ----------------------------------------------------------------------------------

_CU = kernel_source("reduction/gpu.cu")


def _cuda(params):
    if params["kernel"] == "naive":
        launch = ("_launch('reduce_naive', ((outer * inner + 255) // 256,), (256,), _ptr(x), _ptr(y), _n(outer), "
                  "_n(r), _n(inner))")
    else:
        ry = params["ry"]
        launch = (f"grid = outer if inner == 1 else outer * ((inner + 31) // 32)\n"
                  f"_launch('reduce_tiled', (grid,), (32, {ry}), _ptr(x), _ptr(y), _n(outer), _n(r), _n(inner))")
    return Parts(_CU, launch, kernels=("reduce_naive", "reduce_tiled"))


CUDA = (
    Recipe("naive", "One thread per output, looping over the reduced dimension",
           "The straightforward kernel: each thread owns one output and walks R; neighbouring threads read "
           "neighbouring trailing positions, so loads coalesce when the reduced dim is not the last.",
           ({"kernel": "naive", "ry": 1},), _cuda),
    Recipe("split_r_shared", "Split the reduced dimension across warps, merge partials in shared memory",
           "With few outputs, one thread per output leaves the GPU idle and serialises R. Give each block 32 "
           "neighbouring outputs times RY warps that each take every RY-th step of R, then merge the RY partial "
           "results through shared memory; last-dim reductions use a block per row with shuffle reductions.",
           ({"kernel": "tiled", "ry": 16}, {"kernel": "tiled", "ry": 8}, {"kernel": "tiled", "ry": 4}), _cuda),
)

FAMILIES = (Family("reduction", read, forward, {"cpu": CPU, "cuda": CUDA}, device_code),)
