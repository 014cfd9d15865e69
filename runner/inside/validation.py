"""A problem's validation, inside its sandbox: it runs, its facts (outputs, FLOPs, family, the
bytes it moves) and its baselines, eager and torch.compile, timed as candidates are. Runs only
inside a sandbox process.
"""

from __future__ import annotations

import time

import torch

from ..common import compile as compiling
from . import degenerate, jobs, morebaselines
from ..common import facts, timing
from . import problem as problems


def run(job: dict, channel, env: dict) -> dict:
    device, seed = job["device"], job["seed"]
    phases = {"device_wait_s": 0.0}
    try:
        module = problems.load_module(job["problem_source"], jobs.ROOT / "problem.py", "kernellab_problem")
        problems.check_problem_module(module)
        init = list(module.get_init_inputs())
        if device == "cuda" and not fits_before_device(module, init, job):
            mark = time.monotonic()
            channel.request_device()  # too large to run beside the other jobs' early work: all of it holding the device
            phases["device_wait_s"] = time.monotonic() - mark
        model = problems.build_model(module.Model, init, seed, device)
        inputs = problems.make_inputs(module, "get_inputs", seed, device)
        with torch.no_grad():
            outputs = problems.as_outputs(model(*inputs))
        # One traced forward gives both: the FLOPs the output needs and the family with conv
        # dimensionality (aten op names alone cannot tell a Conv3d from a Conv2d).
        known = facts.flop_facts(model, inputs)
        flops, family, upper = known["flops"], known["family"], known["flops_upper_bound"]
        params = list(model.parameters()) + list(model.buffers())
        min_bytes = problems.tensor_bytes(inputs) + problems.tensor_bytes(outputs) + problems.tensor_bytes(params)
        described = [{"shape": list(o.shape), "dtype": str(o.dtype).replace("torch.", "")} for o in outputs]
    except problems.ProblemError as exc:
        return {"status": "invalid", "reason": str(exc)}
    except Exception as exc:
        return jobs.failed_problem(exc, "the problem failed to run")
    # On the problem's own tolerance (its ATOL/RTOL, else its output dtype's); a failure here
    # (a float64 copy too large for the device, say) leaves the problem unchecked, never invalid.
    try:
        atol, rtol = problems.tolerance(outputs, module, None, None)
        degenerate_reason = degenerate.reason(module, model, jobs.truth_model(model), seed, device, atol, rtol)
    except Exception:
        degenerate_reason = None
    if device == "cuda":  # the check's float64 copies stay cached otherwise, counted against the sandbox
        torch.cuda.empty_cache()
    # torch.compile's own compile (seconds of CPU, then one forward) comes before the device wait,
    # like the forward above: validations queued for the device compile meanwhile, not in turn.
    try:
        compiled = compile_model(model, inputs) if job.get("compile_baseline", True) else (None, None)
    except Exception as exc:  # out of device memory (others' memory, likely): retried by the parent
        return jobs.failed_problem(exc, "compiling the problem failed")
    del outputs
    # Baselines are timed as candidates are: holding the device, so no other candidate or
    # baseline of this host runs there meanwhile (asked again when already held: answered at once).
    mark = time.monotonic()
    channel.request_device()
    phases["device_wait_s"] += time.monotonic() - mark
    try:  # the extra baselines are built holding the device: max-autotune times its choices there, graphs run
        sets, _ = jobs.input_sets(module, device, seed)
        more = {kind: morebaselines.build(kind, model, inputs, sets, device) for kind in job.get("more_baselines") or []}
    except Exception as exc:
        return jobs.failed_problem(exc, "building the extra baselines failed")
    del inputs
    began = time.monotonic()
    try:
        baseline = time_baselines(module, model, device, seed, channel, compiled=compiled, more=more, sets=sets)
    except Exception as exc:
        return jobs.failed_problem(exc, "timing the problem failed")
    ended = time.monotonic()
    phases.update(timing_s=ended - began, timing_window=[began, ended])
    return {"status": "ok", "reason": "", "outputs": described, "family": family, "flops": flops,
            "flops_upper_bound": upper, "min_bytes": min_bytes, "baseline": baseline, "environment": env,
            "phases": phases, "degenerate": degenerate_reason}


def fits_before_device(module, init: list, job: dict) -> bool:
    """Whether the work before the device wait (the forward, the degenerate check's float64 copy,
    torch.compile's forward) fits this sandbox's `early_share` of the GPU memory free now (not of
    its total: the warm sandboxes' contexts take 0.5-1.3 GB each). Every sandbox may do that work at once,
    so a problem of gigabytes (KernelBench's level-1 elementwise inputs are 6 GB) does it holding
    the device instead, as does a job to be run `alone` (it ran out of memory before) and a
    problem whose size cannot be drawn on the meta device."""
    if job.get("alone"):
        return False
    if not job.get("early_share"):
        return True
    needed = early_bytes(module, init)
    return needed is not None and needed <= job["early_share"] * torch.cuda.mem_get_info()[0]


def early_bytes(module, init: list) -> int | None:
    """The device memory of the work before the device wait, drawn on the meta device (nothing
    allocated, nothing run): the model, its inputs and outputs four times over (the fp32 forward
    on a copy of its inputs, then the float64 copy's); None where the problem cannot run there (a
    data-dependent branch, say)."""
    try:
        with torch.device("meta"), torch.no_grad():
            model = module.Model(*init)
            inputs = list(module.get_inputs())
            outputs = problems.as_outputs(model(*inputs))
        params = list(model.parameters()) + list(model.buffers())
        return 4 * sum(problems.tensor_bytes(values) for values in (params, inputs, outputs))
    except Exception:
        return None


def compile_model(model, inputs) -> tuple:
    """(torch.compile's model, "default") compiled by one forward on `inputs`, or (None, "failed: why");
    out of memory is raised."""
    try:
        compiled = torch.compile(model, mode="default")
        with torch.no_grad():
            compiled(*inputs)
        return compiled, "default"
    except Exception as exc:
        if jobs.out_of_memory(exc):
            raise
        return None, f"failed: {compiling.first_line(str(exc), 200)}"


def time_baselines(module, model, device: str, seed: int, channel, *, compiled: tuple = (None, None),
                   more: dict | None = None, sets: list | None = None) -> dict:
    """Eager and torch.compile (`compiled`: compile_model's pair, or none) timed like candidates,
    with PyTorch's default TF32 settings; `more`: kind -> morebaselines.build's pair, each timed
    the same way on the same input sets, or kept with the reason it was skipped."""
    sets = sets if sets is not None else jobs.input_sets(module, device, seed)[0]
    compiled_model, mode = compiled
    with torch.no_grad():
        eager = timing.summarize(jobs.measure(channel, "eager", device, model, sets)["samples_ms"])
        compiled_ms = None
        if compiled_model is not None:
            try:
                compiled_ms = _median(jobs.measure(channel, "compile", device, compiled_model, sets))
            except Exception as exc:
                mode = f"failed: {compiling.first_line(str(exc), 200)}"
        timed_more = {}
        for kind, (fn, skipped) in (more or {}).items():
            row = {"ms": None, "mean_ms": None, "skipped": skipped}
            if fn is not None:
                try:
                    stats = timing.summarize(jobs.measure(channel, kind, device, fn, sets)["samples_ms"])
                    row.update(ms=stats["median_ms"], mean_ms=stats["mean_ms"])
                except Exception as exc:
                    row["skipped"] = f"failed: {compiling.first_line(str(exc), 200)}"
            timed_more[kind] = row
    # the mean beside the median: KernelBench's statistic, for its rule's speedup
    return {"eager_ms": eager["median_ms"], "eager_mean_ms": eager["mean_ms"], "compile_ms": compiled_ms,
            "compile_mode": mode, **({"more": timed_more} if timed_more else {})}


def _median(measured: dict) -> float:
    return timing.summarize(measured["samples_ms"])["median_ms"]
