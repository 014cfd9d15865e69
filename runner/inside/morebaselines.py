"""The baselines a run may ask for beside eager and torch.compile's default, built inside the
problem's validation sandbox (validation.py times them as it times eager): torch.compile's
reduce-overhead and max-autotune modes, and the eager model replayed as CUDA graphs.

The names and which need CUDA are common/baselinekinds.py's (plain Python, read by the parent too);
here each is built, or skipped with the reason.
"""

from __future__ import annotations

import torch

from ..common import compile as compiling
from ..common.baselinekinds import CUDA_ONLY
from ..common.baselinekinds import MORE_BASELINES as EXTRA


def build(kind: str, model, inputs: list, sets: list, device: str):
    """(callable, None) ready to time on `sets`, or (None, why it is skipped); out of memory is raised."""
    from .jobs import out_of_memory

    if kind not in EXTRA:
        return None, f"unknown baseline {kind!r}"
    if kind in CUDA_ONLY and device != "cuda":
        return None, ("CUDA graphs need a CUDA device" if kind == "cudagraph" else
                      "reduce-overhead's gain is CUDA graphs, which need a CUDA device")
    try:
        if kind == "cudagraph":
            return graphs(model, sets), None
        compiled = torch.compile(model, mode=kind)
        with torch.no_grad():
            compiled(*inputs)  # compiled (and autotuned) now, outside the timing
        return compiled, None
    except Exception as exc:
        if out_of_memory(exc):
            raise
        return None, f"failed: {compiling.first_line(str(exc), 200)}"


def graphs(model, sets: list):
    """The eager model captured once per timed input set, each graph on that set's own tensors (its
    static inputs), so a call is a replay with no copy in; the call is looked up by its inputs' storage."""
    captured = {}
    side = torch.cuda.Stream()
    with torch.no_grad():
        for inputs in sets:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graphs asks
                for _ in range(3):
                    model(*inputs)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = model(*inputs)
            captured[_key(inputs)] = (graph, out)
    torch.cuda.synchronize()

    def replay(*inputs):
        graph, out = captured[_key(inputs)]
        graph.replay()
        return out

    return replay


def _key(inputs) -> tuple:
    return tuple(v.data_ptr() if isinstance(v, torch.Tensor) else id(v) for v in inputs)
