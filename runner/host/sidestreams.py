"""Side streams in a kernel's source, read before it runs (runner/host/checks.py calls this).

The run judges side-stream work itself: the launch accounting (runner/common/launches.py) refuses, on every
recorded call, a kernel on another stream that was still running when forward returned, the work the
timer would miss. What it cannot judge stays refused here:
- `torch.cuda.set_stream`, which leaves torch's current stream switched after forward returns, for the
  runner's own timer and accounting;
- a side stream given work in a module that never waits for any (no synchronize, wait_stream or
  wait_event anywhere): work nothing waits for, refused even where the accounting cannot record (no
  CUPTI in the environment).
A stream that is created and never given work, or only handed to torch.cuda.graph as its capture
stream (nothing runs during a capture), is left alone.

Plain Python, no torch: the AST only.
"""

from __future__ import annotations

import ast

STREAM_CALLS = {"torch.cuda.Stream", "torch.Stream", "torch.cuda.streams.Stream", "cupy.cuda.Stream",
                "cupy.cuda.stream.Stream"}
JOINS = {"synchronize", "wait_stream", "wait_event", "deviceSynchronize", "streamSynchronize",
         "cudaDeviceSynchronize", "cudaStreamSynchronize"}
CAPTURE_CALLS = {"torch.cuda.graph", "torch.cuda.graphs.graph"}


def findings(tree: ast.Module, resolve) -> list[tuple[ast.AST, str]]:
    """(node, message) for each refusal; `resolve` maps a call's function node to its dotted name."""
    found = []
    holders: dict[str, ast.Call] = {}  # the source text a stream is kept under -> its creation
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (resolve(node.func) or "") == "torch.cuda.set_stream":
            found.append((node, "calls torch.cuda.set_stream, which leaves torch's current stream switched after "
                                "forward returns, for the runner's own timing; use `with torch.cuda.stream(s):` and "
                                "wait for it, or launch on torch's current stream"))
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for call in _stream_creations(node.value, resolve):
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    holders[ast.unparse(target)] = call
    bound = {id(call) for call in holders.values()}
    for call in _stream_creations(tree, resolve):  # created where it is used: `with cp.cuda.Stream():`
        if id(call) not in bound:
            holders[f"<unnamed {id(call)}>"] = call
    if _joins(tree, set(holders)):
        return found
    used = _given_work(tree, set(holders), resolve)
    for text, call in holders.items():
        if text in used or text.startswith("<unnamed"):
            found.append((call, f"gives work to a side stream ({ast.unparse(call)}) that nothing waits for: the "
                                "timer misses it; launch on torch's current stream, or make it wait "
                                "(torch.cuda.current_stream().wait_stream(side)) before forward returns"))
    return found


def _stream_creations(node: ast.AST, resolve) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and (resolve(n.func) or "") in STREAM_CALLS]


def _joins(tree: ast.Module, holders: set[str]) -> bool:
    """Anything waiting for work: a synchronize, or a stream other than a side one waiting (`side.wait_stream(
    current)` only orders the side stream after torch's)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        waiter = ast.unparse(node.func.value) if isinstance(node.func, ast.Attribute) else ""
        if name in JOINS and not (name in {"wait_stream", "wait_event"} and waiter in holders):
            return True
    return False


def _given_work(tree: ast.Module, holders: set[str], resolve) -> set[str]:
    """The holders used as a context (`with s:`), an argument, or through a method (`s.use()`); not a
    capture stream (torch.cuda.graph(g, stream=s)), a test (`s is None`) or a delete."""
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.withitem) and not isinstance(node.context_expr, ast.Call):
            exprs = [node.context_expr]
        elif isinstance(node, ast.Call):
            capture = (resolve(node.func) or "") in CAPTURE_CALLS
            exprs = [*node.args, *(k.value for k in node.keywords if not (capture and k.arg == "stream"))]
            if isinstance(node.func, ast.Attribute):
                exprs.append(node.func.value)
        else:
            continue
        for expr in exprs:
            for sub in ast.walk(expr):
                if isinstance(sub, (ast.Name, ast.Attribute, ast.Subscript)) and ast.unparse(sub) in holders:
                    used.add(ast.unparse(sub))
    return used
