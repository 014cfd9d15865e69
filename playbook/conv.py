"""2D convolution (nn.Conv2d held as self.<name> so weights copy by name), alone or followed by
ReLU and max-pooling. CUDA's fastest idea is an implicit GEMM on Hopper's warpgroup tensor cores in
3xTF32 (M = batch * OH * OW output pixels, N = out channels, K = C * KH * KW taps); off Hopper it
falls back to the fastest fp32 one, a register-tiled direct convolution (11x11 stride-4 kernels,
AlexNet's conv1; other shapes take the output-channel-blocked direct kernel). The plain implicit
GEMMs run on matmul.py's register-blocked core, gathering the patches on the fly."""

import ast
import textwrap

from .matmul import GEMM_CORE, WGMMA_GATE, WGMMA_HELPERS, gemm_variant
from .prelude import defines
from .reading import ReadError, argument, calls, constructed, require_whole, returned, static_value, submodule
from .recipes import Family, Parts, Recipe, bind
from .sources import kernel_source


def read_conv(shape) -> dict:
    facts = _conv_facts(shape)
    require_whole(shape, f"{facts['conv']}({facts['input']})", "conv")
    return facts


def _conv_facts(shape) -> dict:
    found = constructed(shape, {"Conv2d"})
    if found is None:
        raise ReadError("the playbook's conv kernels need an nn.Conv2d assigned in Model.__init__")
    module, call = found
    groups = argument(call, 6, "groups", "1")  # Conv2d(in, out, kernel, stride, padding, dilation, groups, ...)
    value = static_value(shape, groups)
    if isinstance(value, int) and value != 1:
        raise ReadError(f"the playbook's conv kernels compute groups=1 convolutions; this nn.Conv2d has "
                        f"groups={groups} = {value} (a grouped or depthwise convolution)")
    return {"input": shape.first_input, "conv": module, "pool": None}


def read_conv_pool(shape) -> dict:
    facts = _conv_facts(shape)
    pool = submodule(shape, {"MaxPool2d"})
    if pool:
        facts["pool"] = (f"{pool}.kernel_size", f"{pool}.stride", f"{pool}.padding", f"{pool}.dilation",
                         f"{pool}.ceil_mode")
    else:
        found = calls(shape.forward, {"max_pool2d"})
        if not found:
            raise ReadError("could not find nn.MaxPool2d or F.max_pool2d in Model")
        call = found[0]
        size = argument(call, 1, "kernel_size")
        facts["pool"] = (size, argument(call, 2, "stride", "None"), argument(call, 3, "padding", "0"),
                         argument(call, 4, "dilation", "1"), argument(call, 5, "ceil_mode", "False"))
    if not calls(shape.forward, {"relu", "relu_"}) and not submodule(shape, {"ReLU"}):
        raise ReadError("the playbook's conv + ReLU + max-pool kernels need a ReLU in Model")
    _require_pool_of_relu_of_conv(shape, facts["conv"], pool, submodule(shape, {"ReLU"}))
    return facts


def _require_pool_of_relu_of_conv(shape, conv: str, pool: str | None, relu: str | None) -> None:
    """Forward must return exactly max-pool(ReLU(conv(x))), nothing around or between them (a
    ResNet has all three, and much more)."""
    result = returned(shape)

    def applied(node, module, names):  # the single operand of a call of `module` or of a function in `names`
        if not isinstance(node, ast.Call):
            return None
        if module and ast.unparse(node.func) == module and len(node.args) == 1:
            return node.args[0]
        if node in calls(node, names)[:1]:
            operand = argument(node, 0, "input")
            return ast.parse(operand, mode="eval").body if operand else None
        return None

    inner = applied(applied(result, pool, {"max_pool2d"}), relu, {"relu", "relu_"})
    if inner is None or ast.unparse(inner) != f"{conv}({shape.first_input})":
        raise ReadError("the playbook's conv + ReLU + max-pool kernels compute max-pool(ReLU(conv(x))) as forward "
                        f"returns it, not {ast.unparse(result) if result is not None else 'a forward of several steps'!r}")


_FORWARD_CONV = """
{bind_input}conv = {conv}
if x.dtype != torch.float32 or x.dim() != 4:
    raise TypeError("this kernel takes a 4-D float32 input")
if conv.groups != 1 or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
    raise ValueError("this kernel supports groups=1 with numeric zero padding")
x = x.contiguous()
weight = conv.weight.contiguous()
bias = conv.bias.contiguous() if conv.bias is not None else None
nb, cin, h, w = x.shape
cout, _, kh, kw = weight.shape
(sh, sw), (ph, pw), (dh, dw) = conv.stride, conv.padding, conv.dilation
oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
geometry = [_n(v) for v in (nb, cin, h, w, cout, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw)]
"""

_FORWARD_POOL = """
def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)
pool_k, pool_s, pool_p, pool_d, pool_ceil = {pool}
(qh, qw), (qph, qpw), (qdh, qdw) = _pair(pool_k), _pair(pool_p), _pair(pool_d)
(qsh, qsw) = _pair(pool_s) if pool_s is not None and pool_s != [] else (qh, qw)
if pool_ceil or (qdh, qdw) != (1, 1):
    raise ValueError("this kernel supports max-pooling without ceil_mode or dilation")
poh = (oh + 2 * qph - qh) // qsh + 1
pow_ = (ow + 2 * qpw - qw) // qsw + 1
pool_geometry = [_n(v) for v in (qh, qw, qsh, qsw, qph, qpw)]
"""


def forward_conv(facts: dict, launch: str) -> str:
    return _FORWARD_CONV.format(bind_input=bind('x', facts['input']), **facts) + f"""
y = torch.empty((nb, cout, oh, ow), dtype=torch.float32, device=x.device)
if y.numel():
{textwrap.indent(launch, '    ')}
return y
"""


def forward_conv_pool(facts: dict, launch: str) -> str:
    pool = _FORWARD_POOL.format(pool=", ".join(facts["pool"]))
    return _FORWARD_CONV.format(bind_input=bind('x', facts['input']), **facts) + pool + f"""
conv_out = torch.empty((nb, cout, oh, ow), dtype=torch.float32, device=x.device)
y = torch.empty((nb, cout, poh, pow_), dtype=torch.float32, device=x.device)
if y.numel():
{textwrap.indent(launch, '    ')}
return y
"""


_GEOMETRY_C = ("i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 OH, i64 OW, i64 SH, i64 SW, "
               "i64 PH, i64 PW, i64 DH, i64 DW")

# -- CPU -----------------------------------------------------------------------------------

# One output plane (n, oc) at a time. MODE 0: the textbook seven loops with a bounds test per tap.
# MODE 1: taps outer, output pixels inner, valid ranges hoisted so the inner loop has no branches.
# Sums in double: offset inputs make long fp32 chains cancel badly.
_C = kernel_source("conv/cpu.c").replace('GEOMETRY', _GEOMETRY_C)


def _cpu_conv(params):
    launch = "_launch('conv2d', _ptr(x), _ptr(weight), _ptr(bias), _ptr(y), *geometry)"
    return Parts(_C, launch, flags=("-fopenmp",) if params["parallel"] else ())


def _cpu_pool(params):
    launch = ("_launch('conv_relu_pool', _ptr(x), _ptr(weight), _ptr(bias), _ptr(conv_out), _ptr(y), *geometry, "
              "*pool_geometry, _n(poh), _n(pow_))")
    return Parts(_C, launch, flags=("-fopenmp",) if params["parallel"] else ())


def _cpu_recipes(render, relu):
    base = {"relu": relu}
    return (
        Recipe("naive", "Naive direct convolution (seven nested loops)",
               "The straightforward translation: for every output pixel, sum input x weight over channels and the "
               "kernel window in double, testing the bounds of each tap."
               + (" Then ReLU and a max-pool pass." if relu else ""),
               ({**base, "mode": 0, "parallel": 0, "dynamic": 0},), render),
        Recipe("hoisted_openmp", "Taps outside, pixels inside with hoisted bounds, OpenMP over output planes",
               "Turn the loops inside out: for each weight tap, stream a branch-free row of output pixels (the "
               "valid range computed once per row), which the compiler vectorises; (batch, out-channel) planes "
               "go to different cores." + (" Each plane is pooled right after it is computed, while it is hot "
                                           "in cache." if relu else ""),
               ({**base, "mode": 1, "parallel": 1, "dynamic": 0}, {**base, "mode": 1, "parallel": 0, "dynamic": 0}),
               render),
        Recipe("openmp_naive", "OpenMP over output planes, direct loops",
               "Keep the direct loops but split (batch, out-channel) planes across cores with a collapsed "
               "parallel for, statically or dynamically scheduled (planes at the border do less work).",
               ({**base, "mode": 0, "parallel": 1, "dynamic": 0}, {**base, "mode": 0, "parallel": 1, "dynamic": 1}),
               render),
    )


# -- CUDA ----------------------------------------------------------------------------------

_CU_DIRECT = kernel_source("conv/direct.cu")

_CU_OC_BLOCKED = kernel_source("conv/oc_blocked.cu")

_CU_IMPLICIT = kernel_source("conv/implicit.cu")

_CU_POOL = kernel_source("conv/pool.cu")

_CU_REG_TILED = kernel_source("conv/reg_tiled.cu")

_CU_WGMMA = kernel_source("conv/wgmma_tf32x3.cu")


def _cu_source(body: str, pool: bool) -> str:
    return (body + (_CU_POOL if pool else "")).replace("GEOMETRY", _GEOMETRY_C)


_POOL_LAUNCH = ("\n_launch('max_pool', ((y.numel() + 255) // 256,), (256,), _ptr(conv_out), _ptr(y), _n(nb * cout), "
                "_n(oh), _n(ow), _n(poh), _n(pow_), *pool_geometry)")


def _cuda_direct(params):
    pool = params["relu"]
    out = "conv_out" if pool else "y"
    launch = (f"_launch('conv_direct', (({out}.numel() + 255) // 256,), (256,), _ptr(x), _ptr(weight), _ptr(bias), "
              f"_ptr({out}), *geometry)") + (_POOL_LAUNCH if pool else "")
    return Parts(_cu_source(_CU_DIRECT, pool), launch, kernels=("conv_direct",) + (("max_pool",) if pool else ()))


def _cuda_gemm(params):
    pool = params["relu"]
    out = "conv_out" if pool else "y"
    threads = (params["bm"] // params["tm"]) * (params["bn"] // params["tn"])
    bm, bn = params["bm"], params["bn"]
    grid = f"((cout + {bn - 1}) // {bn}, (nb * oh * ow + {bm - 1}) // {bm})"
    launch = (f"_launch('conv_gemm', {grid}, ({threads},), _ptr(x), _ptr(weight), _ptr(bias), _ptr({out}), "
              "*geometry)") + (_POOL_LAUNCH if pool else "")
    core = GEMM_CORE.replace("gn < N", "gn < Ncols")
    return Parts(_cu_source(_CU_IMPLICIT + core, pool), launch,
                 kernels=("conv_gemm",) + (("max_pool",) if pool else ()))


def _cuda_oc_blocked(params):
    pool, ocb, pix = params["relu"], params["ocb"], params["pix"]
    out = "conv_out" if pool else "y"
    fallback = gemm_variant(128, 96, 8, 8, 6, 1)
    launch = f"""
shared = {ocb} * cin * kh * kw * 4
if shared <= _SHARED_LIMIT:
    _launch('conv_ocb', ((oh * ow + {pix - 1}) // {pix}, (cout + {ocb - 1}) // {ocb}, nb), ({pix},), _ptr(x),
            _ptr(weight), _ptr(bias), _ptr({out}), *geometry, shared=shared)
else:
    _launch('conv_gemm', ((cout + 95) // 96, (nb * oh * ow + 127) // 128), (256,), _ptr(x), _ptr(weight), _ptr(bias),
            _ptr({out}), *geometry)""" + (_POOL_LAUNCH if pool else "")
    # the weights of a block may exceed 48 KB of shared memory: opt in to the device's maximum
    setup = ("_SHARED_LIMIT = cupy.cuda.Device().attributes['MaxSharedMemoryPerBlockOptin']\n"
             "_kernels['conv_ocb'].max_dynamic_shared_size_bytes = _SHARED_LIMIT\n")
    macros = "".join(f"#define {k.upper()} {v}\n" for k, v in fallback.items())
    core = GEMM_CORE.replace("gn < N", "gn < Ncols")
    source = _cu_source(macros + _CU_OC_BLOCKED + _CU_IMPLICIT + core, pool)
    return Parts(source, launch, kernels=("conv_ocb", "conv_gemm") + (("max_pool",) if pool else ()), setup=setup)


def _dc_shared(p) -> int:
    """Bytes of shared memory one dconv_k11s4 block takes (its staging buffers, or the output tile)."""
    r, g, pt, ocb = p["dc_r"], p["dc_g"], p["dc_pt"], p["dc_ocb"]
    xn4 = ((pt - 1) * 4 + 11 + 3) // 4 * 4
    pitch = ((g - 1) * pt * 4 + xn4 + 3) // 4 * 4
    rows = (r - 1) * 4 + 11
    stage = (rows * pitch + p.get("dc_rpad", 0) * ((rows - 1) // 4 + 1) + 3) // 4 * 4 + 121 * ocb
    return 4 * max(stage * (2 if p.get("dc_db") else 1), ocb * r * g * pt)


def _cuda_reg_tiled(params):
    pool, fuse = params["relu"], params.get("dc_pool", 0)
    out = "conv_out" if pool else "y"
    fallback = _cuda_oc_blocked({"relu": pool, "ocb": 48, "pix": 256})
    threads = params["dc_r"] * params["dc_g"] * (params["dc_ocb"] // params["dc_oct"])
    width = params["dc_g"] * params["dc_pt"]
    grid = (f"(((oh + {params['dc_r'] - 1}) // {params['dc_r']}) * ((ow + {width - 1}) // {width}), "
            f"(cout + {params['dc_ocb'] - 1}) // {params['dc_ocb']}, nb)")
    shared = _dc_shared(params)
    args = "_ptr(x), _ptr(wt), _ptr(bias), _ptr({target}), *geometry, *{pool_args}"
    conv = f"_launch('dconv_k11s4', {grid}, ({threads},), " + args.format(target=out, pool_args="_DC_NOPOOL") + \
        f", shared={shared})" + (_POOL_LAUNCH if pool else "")
    if pool and fuse:
        conv = f"""
if ow <= {width}:
    _launch('dc_zero', ((y.numel() + 255) // 256,), (256,), _ptr(y), _n(y.numel()))
    _launch('dconv_k11s4', {grid}, ({threads},), {args.format(target='y', pool_args='pool_geometry')},
            _n(poh), _n(pow_), shared={shared})
else:
{textwrap.indent(conv.strip(), '    ')}"""
    launch = f"""
if (kh, kw, sh, sw, dh, dw) == (11, 11, 4, 4, 1, 1) and {shared} <= _SHARED_LIMIT:
    wt = torch.empty((cin * kh * kw * cout,), dtype=torch.float32, device=x.device)
    _launch('dc_transpose', ((wt.numel() + 255) // 256,), (256,), _ptr(weight), _ptr(wt), _n(cout), _n(cin * kh * kw))
{textwrap.indent(conv.strip(), '    ')}
else:
{textwrap.indent(textwrap.dedent(fallback.launch).strip(), '    ')}"""
    kernels = ("dconv_k11s4", "dc_transpose") + (("dc_zero",) if pool else ())
    setup = fallback.setup + "".join(f"_kernels['{k}'].max_dynamic_shared_size_bytes = _SHARED_LIMIT\n"
                                     for k in kernels if k.startswith("dconv"))
    setup += "_DC_NOPOOL = [cupy.int64(0)] * 8\n"
    source = "#define OCB 48\n#define PIX 256\n" + fallback.source + _CU_REG_TILED.replace("GEOMETRY", _GEOMETRY_C)
    return Parts(source, launch, kernels=fallback.kernels + kernels, setup=setup)


def _cuda_wgmma(params):
    """The implicit GEMM on Hopper's wgmma in 3xTF32; elsewhere, or where its shared memory or sizes do not
    fit, the best direct kernel."""
    pool, stages = params["relu"], params["stages"]
    out = "conv_out" if pool else "y"
    direct = {"relu": pool, **dict(zip(_DC_KEYS, _DC_SHAPES["4x5"]))}
    fallback = _cuda_reg_tiled(direct)
    wgmma = f"""
_launch('cw_split', ((Np * Kp + 255) // 256,), (256,), _ptr(weight), _ptr(bt), _n(cout), _n(K), _n(Kp), _n(Np),
        _n(Np * Kp))
tiles = nb * ((oh * ow + 127) // 128) * (Np // 96)
_launch('conv_wgmma_tf32x3', (min(tiles, _SMS),), (256,), _ptr(x), _ptr(bt), _ptr(bias), _ptr({out}), *geometry,
        _n(Kp), _n(Np), _n(Np * Kp), _n(xr), _n(xw), shared=cw_shared)""" + (_POOL_LAUNCH if pool else "")
    launch = f"""
K = cin * kh * kw
Np, Kp = (cout + 95) // 96 * 96, (K + 31) // 32 * 32
# a 128-pixel tile spans at most min(oh, 127 // ow + 2) output rows, whose input rows (xr x xw a channel)
# the kernel stages whole, in two buffers
xr = (min(oh, 127 // ow + 2) - 1) * sh + (kh - 1) * dh + 1
xw = (ow - 1) * sw + (kw - 1) * dw + 1
cw_shared = {stages} * 24576 + 1024 + 8 * ((cin * xr * xw + 3) // 4 * 4) + 4 * Kp  # ring, two row buffers, taps
if _WGMMA and cw_shared <= _SHARED_LIMIT and Kp // 32 >= {stages - 1} and max(x.numel(), {out}.numel()) < 2 ** 31:
    bt = torch.empty((2, Np, Kp), dtype=torch.float32, device=x.device)
{textwrap.indent(wgmma.strip(), '    ')}
else:
{textwrap.indent(textwrap.dedent(fallback.launch).strip(), '    ')}"""
    setup = fallback.setup + WGMMA_GATE + (
        "_SMS = cupy.cuda.Device().attributes['MultiProcessorCount']\n"
        "if _WGMMA:\n"
        "    _kernels['conv_wgmma_tf32x3'].max_dynamic_shared_size_bytes = _SHARED_LIMIT\n")
    source = defines({k: v for k, v in direct.items() if k != "relu"}) + fallback.source + WGMMA_HELPERS + \
        _CU_WGMMA.replace("GEOMETRY", _GEOMETRY_C)
    return Parts(source, launch, kernels=fallback.kernels + ("cw_split", "conv_wgmma_tf32x3"), setup=setup,
                 arch_suffix="a")


def _cuda_recipes(relu):
    tail = " ReLU is applied in the epilogue and a small kernel max-pools the result." if relu else ""
    return (
        Recipe("direct", "Direct convolution, one thread per output",
               "The straightforward kernel: each thread loops over input channels and the kernel window for one "
               "output value." + (" ReLU fused into the store, then a max-pool kernel." if relu else ""),
               ({"relu": relu},), _cuda_direct),
        # the starting kernel stays the plain one; ideas follow, fastest first
        Recipe("implicit_gemm_wgmma_tf32x3",
               "Implicit GEMM on Hopper warpgroup tensor cores in 3xTF32 (wgmma), fp32-accurate",
               "The direct kernels top out near 70% of the fp32 FMA ceiling; the tensor cores have seven times the "
               "rate in TF32. Treat the convolution as a GEMM of pixels by out-channels over C x KH x KW taps and "
               "run it on wgmma, keeping fp32 accuracy with three TF32 products per pair (hi*hi + hi*lo + lo*hi, "
               "where hi is the TF32 rounding and lo the TF32 rounding of the rest): the weights are split once, "
               "the patch values in registers. A persistent grid walks tiles of 128 pixels x 96 channels; a "
               "tile's input rows are staged whole in shared memory (double-buffered: the next tile's load while "
               "this one computes), so each patch value is read there by address instead of gathered tap by tap "
               "from global memory; the weights stream through a multi-stage cp.async ring that runs on from one "
               "tile into the next (K is only a dozen 32-deep tiles). Every few k-steps the tensor cores' partial "
               "sums (which truncate) are added to the fp32 totals with ordinary adds. Needs sm_90a; other GPUs "
               "take the register-tiled direct kernel." + tail,
               tuple({"relu": relu, "stages": stages, "flush": flush}
                     for stages, flush in ((4, 2), (3, 2), (4, 1), (4, 4))),
               _cuda_wgmma),
        _reg_tiled_recipe(relu),
        Recipe("direct_oc_blocked",
               "Direct convolution blocked over output channels, weights broadcast from shared memory",
               "With few input channels and a large kernel window (K = C x KH x KW taps), the gather of an implicit "
               "GEMM costs more than its FMAs. Instead a block keeps the weights of OCB output channels in shared "
               "memory, laid out tap-major so all threads read the same float4 (a broadcast), and each thread owns "
               "one output pixel: every input value it loads feeds OCB FMAs in registers." + tail,
               tuple({"relu": relu, "ocb": ocb, "pix": pix} for ocb, pix in ((48, 256), (32, 128), (16, 128))),
               _cuda_oc_blocked),
        Recipe("implicit_gemm_db", "Implicit GEMM with double-buffered tiles",
               "The implicit GEMM with two shared-memory stages: the gather of the next K slice (address "
               "arithmetic and all) overlaps the FMAs on the current one." + tail,
               tuple({**gemm_variant(*shape), "relu": relu} for shape in
                     ((256, 96, 8, 8, 6, 1), (128, 96, 8, 8, 6, 1), (128, 64, 16, 8, 4, 1))), _cuda_gemm),
        Recipe("implicit_gemm", "Implicit GEMM with register blocking (im2col on the fly)",
               "Treat the convolution as a GEMM of (batch x OH x OW) pixels by out-channels over C x KH x KW taps, "
               "without materialising im2col: tiles of the virtual patch matrix are gathered straight into shared "
               "memory, weights are the other operand, and each thread accumulates a TM x TN register tile in fp32. "
               "Bias is added in the epilogue." + tail,
               tuple({**gemm_variant(*shape), "relu": relu} for shape in
                     ((128, 96, 8, 8, 6, 0), (128, 64, 8, 8, 4, 0), (64, 32, 8, 4, 4, 0))), _cuda_gemm),
    )


# (rows, column groups, pixels per thread, channels per thread, channels per block, min blocks per SM, double
# buffer, row padding), measured on the H200 (docs/BENCHMARKS.md, "register-tiled direct convolution")
_DC_SHAPES = {
    "4x5": (5, 11, 5, 4, 32, 2, 0, 0),       # conv 0.590 ms; fused pool 0.703, separate pool 0.689
    "4x5_pad": (5, 11, 5, 4, 32, 2, 0, 12),  # conv 0.601 ms; fused pool 0.712
    "12x5": (5, 11, 5, 12, 48, 2, 0, 12),    # conv 0.676 ms; fused pool 0.813
    "4x7_db": (5, 8, 7, 4, 32, 2, 1, 0),     # conv 0.690 ms; fused pool 0.768
}
_DC_KEYS = ("dc_r", "dc_g", "dc_pt", "dc_oct", "dc_ocb", "dc_minb", "dc_db", "dc_rpad")


def _reg_tiled_recipe(relu):
    def variant(name, **extra):
        return {"relu": relu, **dict(zip(_DC_KEYS, _DC_SHAPES[name])), **extra}

    if relu:  # best first: ReLU in the conv epilogue + the pool kernel edged out the fused pool epilogue
        variants = (variant("4x5", dc_pool=0), variant("4x5", dc_pool=1), variant("4x5_pad", dc_pool=1),
                    variant("4x7_db", dc_pool=1), variant("12x5", dc_pool=1))
    else:
        variants = tuple(variant(name) for name in ("4x5", "4x5_pad", "12x5", "4x7_db"))
    return Recipe(
        "direct_register_tiled",
        "Direct convolution tiled in registers: input rows in shared memory, out-channels x pixels per thread",
        "For a large kernel window over few input channels (AlexNet's 11x11, stride 4, 3 channels), make the "
        "direct convolution FMA-bound. A block owns 5 output rows x 55 columns of one image and 32-48 output "
        "channels; per input channel it stages the input rows those pixels read (8-byte cp.async pairs, zero "
        "padding included) and the channel's weights, tap-major (16-byte cp.async). Each thread owns 4-12 output "
        "channels x 5-7 neighbouring pixels of a row: per kernel row it loads the 27-35 input values its pixels "
        "touch into registers (float4) and per tap one broadcast float4 of weights per 4 channels, so the inner "
        "loop is about 90% FMAs. Sums stay in strict fp32, in PyTorch's tap order. Full tiles are stored straight "
        "from registers." + (
            " ReLU runs in the epilogue. The first variant stores the activation and max-pools it with a small "
            "kernel; the others pool in the epilogue through shared memory (pool windows split across two blocks "
            "are merged with an integer atomicMax into an output zeroed first, exact since the values are >= 0), "
            "so the conv output never reaches global memory." if relu else ""),
        variants, _cuda_reg_tiled)


FAMILIES = (
    Family("conv2d", read_conv, forward_conv,
           {"cpu": _cpu_recipes(_cpu_conv, 0), "cuda": _cuda_recipes(0)}),
    Family("conv_relu_maxpool", read_conv_pool, forward_conv_pool,
           {"cpu": _cpu_recipes(_cpu_pool, 1), "cuda": _cuda_recipes(1)}),
)
