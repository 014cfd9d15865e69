"""What a problem computes, read from one traced forward of its reference: the FLOPs its output
needs, its op family, and which aten ops are bookkeeping rather than computation."""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

from .dispatchmode import DispatchMode

# One forward of the reference under a dispatch mode records every aten op with where its tensor
# arguments came from. The FLOPs of the matrix-like ops (PyTorch's own per-op formulas) are then
# weighed by how much of each op's output the forward's result can depend on, walking the record
# backwards: a triu/tril keeps a triangle, a slice keeps its elements, a masked_fill drops the filled
# positions, an unused result keeps nothing. With real values, a matrix product whose operands hold
# exact zeros (triangular or diagonal inputs) is also counted over its nonzero products only.


def flop_facts(model, inputs) -> dict:
    """{"flops": useful FLOPs, "flops_as_written": PyTorch's flop counter's figure,
    "flops_upper_bound": True when the useful work may be less than "flops" (it depends on values
    or overlapping uses the analysis only bounds), "values_known": False on the meta device (zero
    operands and masks cannot be seen there), "family": the op family}."""
    trace = trace_forward(model, inputs)
    return {**trace.flop_figures(), "values_known": trace.values_known, "family": trace.family()}


def trace_forward(model, inputs) -> "ForwardTrace":
    trace = ForwardTrace()
    with torch.no_grad():
        with _FunctionNames(trace.functions), trace:
            result = model(*inputs)
    trace.finish(result)
    return trace


_FLOP_FORMULAS = None
_SIZE_QUERIES = {"aten.sym_is_contiguous.default", "aten.is_contiguous.default", "aten.is_contiguous.memory_format",
                 "aten.is_strides_like_format.default", "aten.is_non_overlapping_and_dense.default",
                 "aten.size.default", "aten.sym_size.default", "aten.stride.default", "aten.sym_stride.default",
                 "aten.storage_offset.default", "aten.sym_storage_offset.default", "aten.numel.default",
                 "aten.sym_numel.default", "aten.dim.default", "prim.layout.default", "prim.device.default"}
_CONVOLUTIONS = {"convolution", "_convolution", "cudnn_convolution", "cudnn_convolution_transpose",
                 "convolution_overrideable", "_slow_conv2d_forward", "slow_conv3d_forward", "mkldnn_convolution",
                 "slow_conv_transpose2d", "slow_conv_transpose3d", "_conv_depthwise2d", "conv_depthwise3d",
                 "slow_conv_dilated2d", "slow_conv_dilated3d", "miopen_convolution"}
_PRODUCTS = {"mm", "addmm", "bmm", "baddbmm"}  # the ones whose zero operands are counted
_SAME_ELEMENTS = {"view", "_unsafe_view", "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze", "alias",
                  "detach", "clone", "contiguous", "_to_copy", "to", "flatten", "view_as", "lift_fresh",
                  "lift_fresh_copy", "_reshape_alias", "_unsafe_view", "unflatten", "movedim", "swapaxes",
                  "_conj", "_neg_view", "resolve_conj", "resolve_neg"}
_SELECTIONS = {"slice", "select", "narrow", "diagonal", "index_select", "split", "split_with_sizes", "unbind",
               "chunk", "tensor_split"}


def _flop_formulas() -> dict:
    global _FLOP_FORMULAS
    if _FLOP_FORMULAS is None:
        from torch.utils import flop_counter

        formulas = dict(flop_counter.flop_registry)
        aten = torch.ops.aten
        if hasattr(aten, "_scaled_dot_product_flash_attention_for_cpu"):
            # the CPU attention kernel PyTorch's counter does not know: the same formula as CUDA's
            formulas[aten._scaled_dot_product_flash_attention_for_cpu] = flop_counter.sdpa_flop
        _FLOP_FORMULAS = formulas
    return _FLOP_FORMULAS


class _Node:
    __slots__ = ("name", "short", "sources", "in_numels", "out_numels", "flops", "sparse_flops", "keep", "root",
                 "demand", "approx", "pointwise", "mask_fraction", "masks_unknown", "contributions", "vague")

    def __init__(self, name, short, sources, in_numels, out_numels):
        self.name, self.short, self.sources = name, short, sources
        self.in_numels, self.out_numels = in_numels, out_numels
        self.flops, self.sparse_flops = 0, None
        self.keep = None  # triu/tril: fraction of the input kept
        self.mask_fraction = None  # masked_fill / where: fraction of positions taken from the first tensor
        self.masks_unknown = False  # masked_fill / where on the meta device: that fraction is unknown
        self.root = False  # its result leaves the graph (a Python value, a write into a leaf)
        self.pointwise = False
        self.demand = [0.0] * len(out_numels)
        self.contributions = [0] * len(out_numels)
        self.approx = False  # its demand is a bound (overlapping partial uses)
        self.vague = False  # its output feeds a selection whose values are unknown


class ForwardTrace(DispatchMode):
    """Records the aten ops of one forward with their data flow (see the section comment)."""

    def __init__(self):
        super().__init__()
        from torch.utils.weak import WeakTensorKeyDictionary

        self.nodes: list[_Node] = []
        self.ops: list[str] = []
        self.functions: list[str] = []  # torch-level functions called (torch.conv3d, F.cross_entropy, ...)
        self.convolutions: list[tuple[int, bool]] = []  # (spatial dims, transposed) per convolution
        self._producer = WeakTensorKeyDictionary()  # tensor -> (node index, output slot)
        self.aliased_write = False  # a write through a view: the data flow is no longer followed
        self.values_known = True

    # recording -----------------------------------------------------------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        if name in _SIZE_QUERIES:
            return func(*args, **kwargs)
        formulas = _flop_formulas()
        if func._overloadpacket not in formulas:
            with self:  # as PyTorch's counter does: an op without a formula may decompose into ones with one
                decomposed = func.decompose(*args, **kwargs)
            if decomposed is not NotImplemented:
                self.ops.append(name)
                return decomposed
        out = func(*args, **kwargs)
        self.ops.append(name)
        self._record(func, name, args, kwargs, out, formulas)
        return out

    def _record(self, func, name, args, kwargs, out, formulas) -> None:
        from torch.utils._pytree import tree_flatten

        short = name.split(".")[1] if name.startswith("aten.") else name
        tensors_in = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        flat_out = tree_flatten(out)[0]
        tensors_out = [t for t in flat_out if isinstance(t, torch.Tensor)]
        if any(t.device.type == "meta" for t in tensors_in):
            self.values_known = False
        node = _Node(name, short, [self._producer.get(t) for t in tensors_in], [t.numel() for t in tensors_in],
                     [t.numel() for t in tensors_out])
        node.pointwise = torch.Tag.pointwise in getattr(func, "tags", ())
        bound = _bind(func, args, kwargs)
        if func._overloadpacket in formulas:
            node.flops = int(formulas[func._overloadpacket](*args, **kwargs, out_val=out))
            if short.startswith("_scaled_dot_product") and bound.get("is_causal"):
                query, key = bound["query"], bound["key"]
                node.flops = int(node.flops * _triangle(query.shape[-2], key.shape[-2], 0, upper=False))
        if short in _PRODUCTS and self.values_known and node.flops:
            node.sparse_flops = _nonzero_products(short, bound)
        if short in _CONVOLUTIONS and "weight" in bound:
            transposed = bool(bound.get("transposed", False)) or "transpose" in short
            self.convolutions.append((bound["weight"].dim() - 2, transposed))
        if short in ("triu", "tril") and tensors_in and tensors_in[0].dim() >= 2:
            rows, cols = tensors_in[0].shape[-2:]
            node.keep = _triangle(rows, cols, int(bound.get("diagonal", 0)), upper=short == "triu")
        if short in ("masked_fill", "masked_fill_") and self.values_known and "mask" in bound:
            node.mask_fraction = 1.0 - float(bound["mask"].float().mean())
        if name == "aten.where.self" and self.values_known:
            node.mask_fraction = float(bound["condition"].float().mean())
        node.masks_unknown = not self.values_known and (short.startswith("masked_fill") or short == "where")
        if not tensors_out and tensors_in:
            node.root = True  # .item(), is_nonzero, equal: Python control flow may depend on it
        self._track_writes(func, bound, node, tensors_out)
        index = len(self.nodes)
        self.nodes.append(node)
        for slot, tensor in enumerate(tensors_out):
            self._producer[tensor] = (index, slot)

    def _track_writes(self, func, bound, node, tensors_out) -> None:
        schema = func._schema
        for argument in schema.arguments:
            alias = argument.alias_info
            value = bound.get(argument.name)
            if alias is None or not isinstance(value, torch.Tensor):
                continue
            if alias.is_write:
                if _shares_storage(value):
                    self.aliased_write = True
                if self._producer.get(value) is None:
                    node.root = True  # writes into an input, a parameter or a buffer

    def finish(self, result) -> None:
        from torch.utils._pytree import tree_flatten

        self.result_sources = [self._producer.get(t) for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]

    # figures -----------------------------------------------------------------------------------

    def flop_figures(self) -> dict:
        as_written = sum(node.flops for node in self.nodes)
        if self.aliased_write:  # not followed: every op counts in full
            useful = sum(node.flops if node.sparse_flops is None else node.sparse_flops for node in self.nodes)
            return {"flops": int(useful), "flops_as_written": int(as_written), "flops_upper_bound": bool(useful)}
        self._propagate()
        useful, upper = 0.0, False
        for node in self.nodes:
            if not node.flops:
                continue
            needed = 1.0 if node.root else max(node.demand, default=0.0)
            counted = node.flops * needed
            if node.sparse_flops is not None and node.sparse_flops < counted:
                if needed < 1.0:
                    upper = True  # both bounds apply; the true figure can be below either
                counted = node.sparse_flops
            if (node.approx and 0.0 < needed < 1.0) or (node.vague and needed > 0.0):
                upper = True
            useful += counted
        return {"flops": int(round(useful)), "flops_as_written": int(as_written), "flops_upper_bound": upper}

    def _propagate(self) -> None:
        for node in self.nodes:
            node.demand = [0.0] * len(node.out_numels)
            node.contributions = [0] * len(node.out_numels)
            node.approx = node.vague = False
        for source in self.result_sources:
            if source is not None:
                self._demand(source, 1.0, False, False)
        for node in reversed(self.nodes):
            need = max(node.demand, default=0.0)
            if node.root:
                need = 1.0
            if need <= 0.0:
                continue
            for position, source in enumerate(node.sources):
                if source is None:
                    continue
                share, exact = self._share(node, position, need)
                self._demand(source, share, node.approx or not exact, node.vague or node.masks_unknown)

    def _share(self, node: _Node, position: int, need: float) -> tuple[float, bool]:
        """How much of input `position` the demanded part of `node`'s output reads, and whether
        that figure is exact rather than an upper bound."""
        out_numel = sum(node.out_numels) or 1
        in_numel = node.in_numels[position] or 1
        if node.root:
            return 1.0, True
        if node.keep is not None and position == 0:
            return need * node.keep, need == 1.0
        if node.mask_fraction is not None:
            # masked_fill(self, mask): self where the mask is False; where(condition, self, other)
            taken = {("masked_fill", 0): node.mask_fraction, ("masked_fill_", 0): node.mask_fraction,
                     ("where", 1): node.mask_fraction, ("where", 2): 1.0 - node.mask_fraction}.get((node.short, position))
            if taken is not None:
                return need * taken, need == 1.0 or taken in (0.0, 1.0)
        if node.short in _SELECTIONS and position == 0:
            read = sum(d * n for d, n in zip(node.demand, node.out_numels))
            return min(1.0, read / in_numel), True
        if node.short in _SAME_ELEMENTS or node.short == "expand" or node.pointwise:
            if in_numel == out_numel:
                return need, True
            return (1.0, True) if need > 0 else (0.0, True)
        return 1.0, True

    def _demand(self, source, share: float, approx: bool, vague: bool) -> None:
        index, slot = source
        node = self.nodes[index]
        before = node.demand[slot]
        node.contributions[slot] += 1
        if node.contributions[slot] > 1 and (before < 1.0 or share < 1.0) and share > 0 and before > 0:
            approx = True  # overlapping uses: their union is at most the sum
        node.demand[slot] = min(1.0, before + share)
        node.approx = node.approx or approx
        node.vague = node.vague or (vague and share > 0)

    def family(self) -> str | None:
        return detect_family(self.ops, functions=self.functions, convolutions=self.convolutions)


class _FunctionNames(TorchFunctionMode):
    """Records the names of the torch-level functions called (torch.conv3d, F.cross_entropy, ...)."""

    def __init__(self, names: list[str]):
        super().__init__()
        self.names = names

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def _storage_users(tensor: torch.Tensor) -> int:
    return torch._C._storage_Use_Count(tensor.untyped_storage()._cdata)


_UNSHARED_USERS = None


def _shares_storage(tensor: torch.Tensor) -> bool:
    """Whether another live tensor (a view, or the base of one) sees this tensor's memory, so that
    a write into it changes what that one reads."""
    global _UNSHARED_USERS
    if tensor._is_view():
        return True
    if not hasattr(torch._C, "_storage_Use_Count"):
        return True  # cannot tell: assume it does
    if _UNSHARED_USERS is None:
        _UNSHARED_USERS = _storage_users(torch.empty(1, device="meta"))
    return _storage_users(tensor) > _UNSHARED_USERS


def _bind(func, args, kwargs) -> dict:
    bound = dict(kwargs)
    for argument, value in zip(func._schema.arguments, args):
        bound[argument.name] = value
    return bound


def _triangle(rows: int, cols: int, diagonal: int, *, upper: bool) -> float:
    """Fraction of a rows x cols matrix that triu (upper) or tril keeps at `diagonal`."""
    if rows == 0 or cols == 0:
        return 0.0
    kept = 0
    for i in range(rows):
        if upper:
            kept += max(0, cols - max(0, i + diagonal))
        else:
            kept += max(0, min(cols, i + diagonal + 1))
    return kept / (rows * cols)


def _nonzero_products(op: str, bound: dict) -> int | None:
    """2 x the multiply-adds whose operands are both nonzero, for mm/addmm/bmm/baddbmm."""
    first = bound.get("self") if op in ("mm", "bmm") else bound.get("mat1", bound.get("batch1"))
    second = bound.get("mat2") if op in ("mm", "bmm", "addmm") else bound.get("batch2")
    if not isinstance(first, torch.Tensor) or not isinstance(second, torch.Tensor):
        return None
    # per k: rows of `first` with a nonzero in column k, times columns of `second` with one in row k
    columns = _count_nonzero(first, dim=-2)
    rows = _count_nonzero(second, dim=-1)
    return int(2 * (columns.double() * rows.double()).sum().item())


def _count_nonzero(tensor: torch.Tensor, dim: int, chunk_elements: int = 1 << 26) -> torch.Tensor:
    """torch.count_nonzero along `dim`, over slices of the first dimension, so that the temporary
    comparison never holds much more than `chunk_elements` at once."""
    dim = dim % tensor.dim()
    if tensor.numel() <= chunk_elements or tensor.shape[0] <= 1:
        return torch.count_nonzero(tensor, dim=dim)
    step = max(1, chunk_elements // (tensor.numel() // tensor.shape[0]))
    parts = [torch.count_nonzero(tensor[i:i + step], dim=dim) for i in range(0, tensor.shape[0], step)]
    return torch.stack(parts).sum(0) if dim == 0 else torch.cat(parts)


# --- family ------------------------------------------------------------------------------------

_LOSS_OPS = ("nll_loss", "mse_loss", "huber_loss", "smooth_l1_loss", "l1_loss", "binary_cross_entropy", "kl_div",
             "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "margin_ranking_loss",
             "hinge_embedding_loss", "triplet_margin_loss", "cosine_embedding_loss", "poisson_nll_loss",
             "gaussian_nll_loss", "ctc_loss", "cross_entropy")
_MATRIX_OPS = (".mm.", ".bmm.", "addmm", "matmul", "baddbmm", "addbmm", ".mv.", "addmv", ".dot.", "linear")


def detect_family(op_names: list[str], *, functions: list[str] | None = None,
                  convolutions: list[tuple[int, bool]] | None = None) -> str | None:
    """Best-effort op family from the aten ops the reference's forward ran.

    `functions` (torch-level function names, e.g. "conv_transpose3d", "cross_entropy") and
    `convolutions` ((spatial dims, transposed) per convolution) sharpen it where aten names alone
    cannot tell: every convolution is aten.convolution, whatever its dimensionality.
    Families the playbook and the app know: matmul, conv2d, conv_relu_maxpool, softmax, layernorm,
    elementwise, reduction. Others: loss, attention, matmul_softmax, log_softmax, conv1d, conv3d,
    conv_transpose1d/2d/3d, normalization (batch, instance and group norm), pooling, scan (cumulative
    sums and products: every output depends on a prefix, neither a map nor a reduction)."""
    ops = set(op_names)
    called = set(functions or ())

    def has(*parts):
        return any(any(p in op for p in parts) for op in ops)

    if has(*_LOSS_OPS) or any(name.endswith("_loss") or name in _LOSS_OPS for name in called):
        return "loss"
    if has("convolution", "conv2d", "conv3d", "conv1d", "conv_depthwise", "conv_transpose"):
        kinds = list(convolutions or ()) or _convolution_kinds(functions or ())
        if kinds and kinds[0] != (2, False):
            dims, transposed = kinds[0]
            return f"conv_transpose{dims}d" if transposed else f"conv{dims}d"
        if has("relu", "clamp_min") and has("max_pool"):
            return "conv_relu_maxpool"
        return "conv2d"
    attention = has("scaled_dot_product", "_flash_attention", "_efficient_attention")
    products = sum(1 for op in op_names if any(p in op for p in (".bmm.", "baddbmm", ".mm.", "addmm")))
    if attention or (has("softmax") and not has("log_softmax") and has(".bmm.", "baddbmm") and products >= 2):
        return "attention"
    if has("log_softmax"):
        return "matmul_softmax" if has(*_MATRIX_OPS) else "log_softmax"
    if has("softmax"):
        return "matmul_softmax" if has(*_MATRIX_OPS) else "softmax"
    if has("layer_norm"):
        return "layernorm"
    if has(*_MATRIX_OPS):
        return "matmul"
    if has("batch_norm", "instance_norm", "group_norm"):
        return "normalization"
    if has("max_pool", "avg_pool", "adaptive_max_pool", "adaptive_avg_pool", "lp_pool"):
        return "pooling"
    if has("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"):
        return "scan"
    reductions = ("sum", "mean", "amax", "amin", "max.dim", "min.dim", "prod", "var", "std", "norm", "argmax",
                  "argmin", "logsumexp", "linalg_vector_norm")
    compute = [op for op in ops if not is_bookkeeping(op)]
    if any(any(op.startswith(f"aten.{r}") for r in reductions) for op in compute):
        return "reduction"
    if compute:
        return "elementwise"
    return None


def _convolution_kinds(functions: list[str]) -> list[tuple[int, bool]]:
    kinds = []
    for name in functions:
        for dims in (1, 2, 3):
            if name == f"conv{dims}d":
                kinds.append((dims, False))
            elif name == f"conv_transpose{dims}d":
                kinds.append((dims, True))
    return kinds


BOOKKEEPING_OPS = {
    # allocation, views, shape, dtype/contiguity: what a kernel's forward may do with PyTorch
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "zero_", "fill_", "full", "full_like", "ones", "ones_like",
    "view", "_unsafe_view", "reshape", "flatten", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "expand", "as_strided", "alias", "detach", "lift_fresh", "slice", "select", "split", "chunk",
    "unbind", "view_as", "expand_as", "contiguous", "clone", "_to_copy", "to", "copy_", "_copy_from",
    "_copy_from_and_resize", "resize_", "set_", "lift_fresh_copy", "is_contiguous", "size", "stride",
    "numel", "dim", "sym_size", "sym_stride", "sym_numel", "_local_scalar_dense", "item", "narrow",
    "split_with_sizes",
}


def is_bookkeeping(op: str) -> bool:
    # "aten.view.default" -> "view"
    parts = op.split(".")
    name = parts[1] if len(parts) > 1 and parts[0] == "aten" else parts[0]
    return name in BOOKKEEPING_OPS
