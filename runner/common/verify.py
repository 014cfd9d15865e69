"""Correctness and the runtime cheat defences, in one place.

Correctness ("Correctness, precisely" in the architecture): the truth is the reference in
float64 where it runs, err(x) = max |x - truth| / (atol + rtol*|truth|); a candidate passes
with err <= 1, or err <= 2 * err(fp32 reference). Non-finite values must sit where the
truth has them.

Runtime defences (the static ones are in checks.py):
- memory the candidate may allocate is poisoned with NaN first, and reference outputs
  are dropped before the candidate runs, so stale answers cannot be picked up;
- the candidate gets copies of the inputs, compared afterwards for mutation;
- outputs that alias an input are rejected;
- the aten ops forward runs are recorded: only bookkeeping (allocation, views, dtype) is
  allowed unless library calls are; and a kernel of its own must be launched (a cupy
  RawKernel/RawModule function, a ctypes function of a library it built, or a function of
  an extension it built: launches.py counts them);
- torch/timer/comparison functions are snapshotted and must not change;
- no thread may outlive a forward call.
"""

from __future__ import annotations

import math
import re
import sys
import threading
import time

import torch

from . import findings
from .facts import is_bookkeeping

# Captured when the sandbox starts, before any candidate code exists.
_isfinite, _isnan, _abs, _where, _equal = torch.isfinite, torch.isnan, torch.abs, torch.where, torch.equal
thread_count, _threads = threading.active_count, threading.enumerate


class Rejected(Exception):
    """The candidate broke a rule; the message is the reason shown to people."""


# --- correctness -------------------------------------------------------------------------

# Elements compared at once: float64 temporaries of 128 MB each. Whole, a 6 GB output's float64 copy,
# difference and ratio took 60 GB beside the candidate's on an 80 GB GPU (docs/BENCHMARKS.md, 2026-12-07).
COMPARE_CHUNK = 1 << 24


def slices(*tensors: torch.Tensor):
    """Aligned views of tensors of one shape, at most COMPARE_CHUNK elements each, along the
    leading dimensions (never a copy); the tensors whole where they are small or their shapes differ."""
    first = tensors[0]
    if first.dim() == 0 or first.numel() <= COMPARE_CHUNK or any(t.shape != first.shape for t in tensors):
        yield tensors
        return
    per_row = first[0].numel()
    if per_row > COMPARE_CHUNK:
        for i in range(first.shape[0]):
            yield from slices(*(t[i] for t in tensors))
        return
    rows = COMPARE_CHUNK // per_row
    for start in range(0, first.shape[0], rows):
        yield tuple(t[start:start + rows] for t in tensors)


def err_ratio(x: torch.Tensor, truth: torch.Tensor, atol: float, rtol: float) -> tuple[float, float]:
    """(err, max_abs_err) of x against truth, both computed in float64. Non-finite truth must be
    matched exactly (same kind); anything else there is err=inf. On the GPU in one pass where it
    applies (gpucompare.py), else with PyTorch, a slice at a time: the same answer either way."""
    if x.is_cuda:
        from . import gpucompare

        found = gpucompare.err_ratio(x, truth, atol, rtol)
        if found is not None:
            return found
    return err_ratio_torch(x, truth, atol, rtol)


def err_ratio_torch(x: torch.Tensor, truth: torch.Tensor, atol: float, rtol: float) -> tuple[float, float]:
    worst, worst_abs = 0.0, 0.0
    for xs, ts in slices(x.detach(), truth.detach()):
        err, abs_err = _err_ratio(xs.to(torch.float64), ts.to(torch.float64), atol, rtol)
        worst, worst_abs = max(worst, err), max(worst_abs, abs_err)
        if worst_abs == math.inf and worst == math.inf:
            break
    return worst, worst_abs


def _err_ratio(x64: torch.Tensor, t64: torch.Tensor, atol: float, rtol: float) -> tuple[float, float]:
    if not bool(_isfinite(t64).all()):
        return _err_with_non_finite_truth(x64, t64, atol, rtol)
    diff = _abs(x64 - t64)  # NaN where x is NaN, inf where x is inf
    # an exact match is no error even at zero tolerance (integer outputs: argmax), where 0/0 would be NaN
    ratio = _where(diff == 0, 0.0, diff / (_abs(t64) * rtol + atol))
    err, max_abs = float(ratio.max()), float(diff.max())
    if math.isnan(err):
        return math.inf, math.inf
    return err, max_abs


def _err_with_non_finite_truth(x64, t64, atol, rtol) -> tuple[float, float]:
    finite = _isfinite(t64)
    bad = ~finite
    same_nan = _isnan(x64[bad]) & _isnan(t64[bad])
    same_inf = x64[bad] == t64[bad]
    if not bool((same_nan | same_inf).all()):
        return math.inf, math.inf
    if not bool(finite.any()):
        return 0.0, 0.0
    return _err_ratio(x64[finite], t64[finite], atol, rtol)


def compare(outputs: list, truths: list, atol: float, rtol: float) -> tuple[float, float]:
    worst, worst_abs = 0.0, 0.0
    for out, truth in zip(outputs, truths):
        err, abs_err = err_ratio(out, truth, atol, rtol)
        worst, worst_abs = max(worst, err), max(worst_abs, abs_err)
    return worst, worst_abs


def passes(err: float, ref_fp32_err: float) -> bool:
    return err <= 1.0 or err <= 2.0 * ref_fp32_err


def check_output_form(outputs, expected: list) -> list:
    """The candidate's result as a list of tensors of exactly the reference's type, dtype,
    shape and device; raises Rejected (wrong form is not a near miss)."""
    if isinstance(outputs, torch.Tensor):
        got = [outputs]
    elif isinstance(outputs, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in outputs):
        got = list(outputs)
    else:
        raise Rejected(f"forward returned {type(outputs).__name__}, not a tensor or a tuple of tensors")
    if len(got) != len(expected):
        raise Rejected(f"forward returned {len(got)} tensors; the reference returns {len(expected)}")
    for i, (out, exp) in enumerate(zip(got, expected)):
        where = f"output {i}" if len(got) > 1 else "the output"
        plain_tensor(out, where)
        if out.dtype != exp["dtype"]:
            raise Rejected(f"{where} has dtype {out.dtype}; the reference's is {exp['dtype']}")
        if tuple(out.shape) != tuple(exp["shape"]):
            raise Rejected(f"{where} has shape {tuple(out.shape)}; the reference's is {tuple(exp['shape'])}")
        if out.device.type != exp["device"]:
            raise Rejected(f"{where} is on {out.device.type}; the reference's is on {exp['device']}")
    return got


def plain_tensor(out, where: str = "the output") -> None:
    """A lazy output (a tensor subclass, or a layout that defers work until read) would move the
    computation out of the timed call into the comparison: only plain dense tensors count."""
    if type(out) is not torch.Tensor:
        raise Rejected(f"{where} is a {type(out).__name__}, not a plain torch.Tensor; return plain dense tensors "
                       "whose values are computed inside forward")
    if out.layout != torch.strided or out.is_nested:
        raise Rejected(f"{where} has layout {out.layout}; return plain dense (strided) tensors")


# --- memory, inputs, aliasing ------------------------------------------------------------

def poison(shapes_dtypes: list, device: str) -> None:
    """Fill freshly allocated blocks of the outputs' sizes with NaN (or all-ones bits for
    integers) and free them, so an allocation the candidate makes next holds garbage, not a
    stale answer."""
    blocks = []
    for shape, dtype in shapes_dtypes:
        block = torch.empty(shape, dtype=dtype, device=device)
        if block.is_floating_point():
            block.fill_(float("nan"))
        elif dtype == torch.bool:
            block.fill_(True)
        else:
            block.fill_(-1)
        blocks.append(block)
    if device == "cuda":
        torch.cuda.synchronize()
    del blocks


def copies(inputs: list) -> list:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]


def check_not_mutated(originals: list, given: list) -> None:
    for i, (orig, seen) in enumerate(zip(originals, given)):
        if isinstance(orig, torch.Tensor) and not _same_bits(orig, seen):
            raise Rejected(f"forward wrote into its input {i}; inputs must be left unchanged")


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        both_nan = _isnan(a) & _isnan(b)
        return bool(((a == b) | both_nan).all())
    return bool(_equal(a, b))


def check_no_alias(outputs: list, inputs: list) -> None:
    spans = [_span(v) for v in inputs if isinstance(v, torch.Tensor) and v.numel()]
    for i, out in enumerate(outputs):
        if not out.numel():
            continue
        lo, hi = _span(out)
        for j, (ilo, ihi) in enumerate(spans):
            if lo < ihi and ilo < hi:
                raise Rejected(f"output {i} shares memory with an input; outputs must be new tensors")


def _span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


# --- what forward runs ------------------------------------------------------------------

def mismatch(out: torch.Tensor, truth: torch.Tensor, atol: float, rtol: float, *, whole: bool) -> dict:
    """What is wrong in one output, for the kernel's author: how many elements are outside the tolerance,
    NaN or infinite, and (`whole`: the entire output, not a sample whose positions must stay unsaid)
    where: the last columns or rows when the wrong ones all sit there (an unwritten tail)."""
    bad = torch.empty(out.shape, dtype=torch.bool, device=out.device)
    found = {"wrong": 0, "total": int(bad.numel()), "nan": 0, "inf": 0, "pattern": None}
    for xs, ts, wrong in slices(out.detach(), truth.detach(), bad):  # float64 a slice at a time, as err_ratio
        x, t = xs.to(torch.float64), ts.to(torch.float64)
        wrong.copy_(~torch.isclose(x, t, rtol=rtol, atol=atol, equal_nan=True))
        # counted a slice at a time: a bool tensor's sum first copies it whole as int64 (8 bytes an element)
        found["wrong"] += int(wrong.sum())
        found["nan"] += int(_isnan(x).sum())
        found["inf"] += int(torch.isinf(x).sum())
    if whole and found["wrong"] and out.dim() >= 2:
        grid = bad.reshape(-1, out.shape[-1])
        found["pattern"] = _tail(grid.any(0), "column") or _tail(grid.any(1), "row")
    return found


def _tail(hit: torch.Tensor, what: str) -> str | None:
    """"the last 3 columns (of 512)" when exactly a tail of the axis holds every wrong element."""
    count, wrong = hit.numel(), int(hit.sum())
    if wrong == 0 or wrong == count or not bool(hit[count - wrong:].all()):
        return None
    return f"the last {what}" if wrong == 1 else f"the last {wrong} {what}s"


class Swallowed:
    """The first exception raised in the kernel's own code during one call and handled there (a
    `try: kernel() except: <PyTorch>` fallback), as "line N: Type: message". sys.settrace, on the
    recorded calls only: the kernel's frames alone get a local tracer, without line events."""

    IGNORED = (StopIteration, StopAsyncIteration, GeneratorExit)

    def __init__(self, filename: str):
        self.filename = filename
        self.found: str | None = None

    def __enter__(self) -> "Swallowed":
        self.previous = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, exc_type, *_) -> None:
        sys.settrace(self.previous)
        if exc_type is not None:  # it was not swallowed: the call failed with it
            self.found = None

    def _call(self, frame, event, arg):
        if frame.f_code.co_filename != self.filename:
            return None
        frame.f_trace_lines = False
        return self._local

    def _local(self, frame, event, arg):
        if event == "exception" and self.found is None and not issubclass(arg[0], self.IGNORED):
            text = str(arg[1]).strip().splitlines()
            message = f"{arg[0].__name__}: {text[0][:160]}" if text else arg[0].__name__
            self.found = f"line {frame.f_lineno}: {message}"
        return self._local


def computing_ops(ops: list[str]) -> list[str]:
    """The recorded ops that compute rather than allocate, view or convert."""
    seen = []
    for op in ops:
        if not is_bookkeeping(op) and op not in seen:
            seen.append(op)
    return seen


def library_use(ops: list[str], own_launches: int, call: int) -> findings.Finding | None:
    """Without library calls: PyTorch computing beside a kernel of its own is a partial replacement
    (named ops, allowed with library calls); PyTorch or nothing without one is no kernel of its own."""
    computing = computing_ops(ops)
    if computing and own_launches:
        return findings.Finding(findings.partial_reason([findings.aten_name(op) for op in computing],
                                                        f"forward (untimed call {call})"), findings.PARTIAL)
    if computing:
        return findings.Finding(f"forward computes with PyTorch on untimed call {call} (" + ", ".join(computing[:5])
                                + ") and launched no kernel of its own; a kernel of its own must do the "
                                "computation (or allow library calls)", findings.NO_KERNEL)
    if not own_launches:
        return findings.Finding(f"forward launched no kernel of its own on untimed call {call} (a cupy "
                                "RawKernel/RawModule function, a Triton kernel, or a function of a library or "
                                "extension the kernel compiled); library calls are not allowed in this search",
                                findings.NO_KERNEL)
    return None


# --- tampering -------------------------------------------------------------------------

GUARDED = [
    (torch, "isfinite"), (torch, "isnan"), (torch, "abs"), (torch, "where"), (torch, "equal"),
    (torch, "allclose"), (torch, "max"),
    (torch.Tensor, "clone"), (torch.Tensor, "copy_"), (torch.Tensor, "__sub__"), (torch.Tensor, "to"),
    (torch.Tensor, "data_ptr"), (torch.nn.Module, "__call__"), (torch.nn.Module, "load_state_dict"),
    (time, "perf_counter"), (time, "monotonic"), (time, "time"), (threading, "active_count"),
]
if torch.cuda.is_available():
    GUARDED += [(torch.cuda, "synchronize"), (torch.cuda, "Event"), (torch.cuda.Event, "elapsed_time"),
                (torch.cuda.Event, "record"), (torch.cuda, "current_stream")]


def snapshot() -> dict:
    return {(id(owner), name): (owner, getattr(owner, name)) for owner, name in GUARDED}


def check_untouched(before: dict) -> None:
    for key, (owner, value) in before.items():
        name = key[1]
        if getattr(owner, name) is not value:
            where = getattr(owner, "__name__", type(owner).__name__)
            raise Rejected(f"the kernel replaced {where}.{name}; patching torch, timers or comparisons "
                           "is not allowed")


def check_no_new_threads(before: int) -> None:
    now = thread_count()
    if now > before:
        names = ", ".join(t.name for t in _threads()[before:])  # the newest last
        raise Rejected(f"forward left {now - before} thread(s) running ({names}); work must finish inside forward "
                       "on the calling thread")


# --- precision ---------------------------------------------------------------------------

def detect_precision(kernel_source: str, ops: list[str], output_dtypes: list) -> str | None:
    """The arithmetic the kernel uses, from its source and the conversions forward made."""
    text = kernel_source.lower()
    found = set()
    if any(m in text for m in ("__half", "half2", "__float2half", "torch.half", "fp16")) \
            or re.search(r"(?<!b)float16", text):
        found.add("fp16")
    if any(m in text for m in ("bfloat16", "__nv_bfloat16", "bf16")):
        found.add("bf16")
    if "tf32" in text or "allow_tf32 = true" in text or "allow_tf32=true" in text:
        found.add("tf32")
    if any(m in text for m in ("wmma", "mma.sync", "wgmma")) and not found:
        found.add("tf32")
    if any("_to_copy" in op for op in ops) and not found:
        found.add("mixed")
    if not found:
        if output_dtypes and all(d == torch.float64 for d in output_dtypes):
            return "fp64"
        if output_dtypes and all(d in (torch.float32,) for d in output_dtypes):
            return "fp32"
        return None
    if len(found) > 1:
        return "mixed"
    return found.pop()
