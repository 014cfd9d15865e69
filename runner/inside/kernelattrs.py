"""The build's resources of the kernels a correct candidate launches (CUDA only, in its sandbox,
after timing): registers per thread, shared memory, grid and block from CUPTI's activity records
(torch.profiler; no privilege needed, any launcher), local memory per thread (spills and stack
arrays) from cupy's function attributes and Triton's compiled-kernel metadata.

Advisory only: the candidate's process could lie here, so none of it touches the verdict."""

from __future__ import annotations

import json
import sys
from pathlib import Path

MAX_KERNELS = 8
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
DEVICE_LIMITS = (("sm_count", "multi_processor_count"), ("warp_size", "warp_size"),
                 ("max_threads_per_sm", "max_threads_per_multi_processor"),
                 ("registers_per_sm", "regs_per_multiprocessor"),
                 ("shared_mem_per_sm", "shared_memory_per_multiprocessor"))


def collect(call, inputs, built: dict, trace: Path) -> dict:
    """One untimed call under the profiler; its kernels' rows (the longest first) and the device's limits."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as profiler, torch.no_grad():
        call(*inputs)
        torch.cuda.synchronize()
    profiler.export_chrome_trace(str(trace))
    try:
        events = json.loads(trace.read_text()).get("traceEvents", [])
    finally:
        trace.unlink(missing_ok=True)
    local = {**cupy_local_bytes(built), **triton_local_bytes(sys.modules.get("kernellab_kernel"))}
    props = torch.cuda.get_device_properties(0)
    return {"kernels": rows(events, local),
            "device": {"name": props.name,
                       **{key: int(getattr(props, attr, 0) or 0) or None for key, attr in DEVICE_LIMITS}}}


def collect_or_none(call, make_inputs, built: dict, trace: Path) -> dict | None:
    """`collect` on fresh inputs, or None when the profiler cannot say: no profile rather than no verdict."""
    try:
        return collect(call, make_inputs(), built, trace)
    except Exception:  # noqa: BLE001
        return None


def rows(events: list[dict], local: dict) -> list[dict]:
    """Kernel events grouped by name: summed time (as a share), the first launch's shape."""
    kernels = [e for e in events if e.get("cat") == "kernel"]
    total = sum(float(e.get("dur") or 0) for e in kernels) or 1.0
    grouped: dict[str, dict] = {}
    for event in kernels:
        name, args = str(event.get("name", ""))[:200], event.get("args") or {}
        row = grouped.setdefault(name, {
            "name": name, "registers": args.get("registers per thread"),
            "shared_bytes": args.get("shared memory"), "grid": args.get("grid"),  # static + dynamic
            "block": args.get("block"), "local_bytes": _local(name, local), "launches": 0, "time_share": 0.0})
        row["launches"] += 1
        row["time_share"] += float(event.get("dur") or 0) / total
    return sorted(grouped.values(), key=lambda r: -r["time_share"])[:MAX_KERNELS]


def _local(name: str, local: dict):
    base = name.split("(")[0].split("<")[0].split()[-1] if name.split() else name
    return local.get(name, local.get(base))


def cupy_local_bytes(built: dict) -> dict:
    """Local memory per thread of the cupy kernels launched (launches.LaunchCounter keeps them)."""
    found = {}
    for name, function in built.items():
        try:
            found[name] = _cupy_local_size(function)
        except Exception:  # noqa: BLE001 - an attribute this cupy does not have: unknown
            continue
    return found


def _cupy_local_size(function) -> int:
    attrs = getattr(function, "attributes", None)  # a RawKernel's dict of its function's attributes
    if attrs:
        return int(attrs["local_size_bytes"])
    from cupy.cuda import driver  # a RawModule's Function: the driver's attribute of its handle

    return int(driver.funcGetAttribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function.ptr))


def triton_local_bytes(module) -> dict:
    """Spilled bytes of the candidate's compiled Triton kernels (n_spills, per thread)."""
    found = {}
    for value in vars(module).values() if module else ():
        jit = value  # an Autotuner (or Heuristics) wraps the JITFunction, whose own `fn` is the Python function
        for _ in range(4):
            if hasattr(jit, "device_caches") or not hasattr(jit, "fn"):
                break
            jit = jit.fn
        for caches in (getattr(jit, "device_caches", None) or {}).values():
            cache = caches[0] if isinstance(caches, tuple) else caches
            for compiled in (cache.values() if isinstance(cache, dict) else ()):
                name = getattr(getattr(compiled, "metadata", None), "name", None) or getattr(jit, "__name__", "")
                spills = getattr(compiled, "n_spills", None)
                if name and spills is not None:
                    found[name] = int(spills) * 4  # n_spills counts 32-bit registers
    return found
