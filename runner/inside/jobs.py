"""The jobs a sandbox runs: evaluate one candidate, check the GPU's health, time a problem with
do_bench (validation is validation.py's, the truths truths.py's). Runs only inside a sandbox process.

The result dicts here are raw measurements; the parent (api.py) adds the quarantine
decision, speedups and everything else it can compute without trusting the sandbox more
than it must. An evaluation decides nothing about correctness here: it ships the candidate's
outputs (exchange.py) to the trusted judge (referee.py), and its own checks can only refuse.
"""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path

import torch

from ..common import compile as compiling
from ..common import dispatchmode, findings, launches, rules, sampling, timing, verify, watchdog
from ..common.exchange import Writer
from . import globalstate, kernelattrs, machine
from . import problem as problems
from . import replay as replay_

ROOT = Path(os.environ.get("KERNELLAB_SANDBOX_ROOT", "/tmp"))
INPUT_SETS_MAX = 8
INPUT_SETS_BYTES = 4 * 1024**3  # memory for distinct timed input sets
_perf_counter = time.perf_counter


class Verdict(Exception):
    def __init__(self, status: str, reason: str, **extra):
        super().__init__(reason)
        self.status, self.reason, self.extra = status, reason, extra


# --- jobs ----------------------------------------------------------------------------------

def run(job: dict, channel, env: dict, exchange_fd: int | None = None) -> dict:
    kind = job.get("job")
    if kind == "evaluate":
        return run_evaluate(job, channel, exchange_fd)
    if kind == "health":
        from . import probe

        return probe.health(job["device"])
    if kind == "do_bench":
        return run_do_bench(job, channel)
    if kind == "counters":
        from . import ncuprofile

        return ncuprofile.run(job, channel, ROOT)
    if kind == "probe":
        from . import probe

        return probe.run(job["device"], load_inline=bool(job.get("load_inline")))
    return {"status": "error", "reason": f"unknown job {kind!r}"}


def run_do_bench(job: dict, channel) -> dict:
    """The bench's agreement check (its own trusted kernel): triton's do_bench and this
    runner's timer on the same model and inputs in one process, announced to the parent as one
    measurement, so a reference taken while the GPU was held back is taken again (or marked)."""
    import triton.testing

    device, seed = job["device"], job["seed"]
    module = problems.load_module(job["problem_source"], ROOT / "problem.py", "kernellab_problem")
    kernel = problems.load_module(job["kernel_source"], ROOT / "kernel.py", "kernellab_kernel")
    new = problems.build_model(kernel.ModelNew, list(module.get_init_inputs()), seed, device)
    inputs = problems.make_inputs(module, "get_inputs", seed, device)
    with torch.no_grad():
        while True:
            channel.send("timing", what="do_bench", at="begin")
            theirs = triton.testing.do_bench(lambda: new(*inputs), warmup=100, rep=500, return_mode="median")
            ours = timing.summarize(timing.time_cuda(new, [inputs])["samples_ms"])["median_ms"]
            channel.send("timing", what="do_bench", at="end")
            if not channel.receive().get("again"):
                return {"status": "ok", "do_bench_ms": theirs, "runner_ms": ours}


# --- a problem's failures (validation.py, truths.py) ------------------------------------

def failed_problem(exc: Exception, what: str) -> dict:
    """Out of memory is `oom`, not `invalid`: often another process's memory, retried by the parent."""
    text = f"{what}: {type(exc).__name__}: {compiling.first_line(str(exc))}"
    status = "oom" if out_of_memory(exc) else "invalid"
    return {"status": status, "reason": text, "log": compiling.short_traceback(exc)}


def out_of_memory(exc: BaseException) -> bool:
    lowered = str(exc).lower()
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" \
        or "out of memory" in lowered or "can't allocate memory" in lowered


def measure(channel, what: str, device: str, fn, sets, **options) -> dict:
    """One timed measurement, announced to the parent, which reads the GPU's state around it (gpustate.py)
    and answers whether it is to be taken again; a wall-clock gap the events missed informs that, no verdict."""
    while True:
        channel.send("timing", what=what, at="begin")
        measured = (timing.time_cuda if device == "cuda" else timing.time_cpu)(fn, sets, **options)
        channel.send("timing", what=what, at="end", gap=timing.unseen_work(measured))
        if not channel.receive().get("again"):
            return measured


def input_sets(module, device: str, seed: int, needed=None) -> tuple[list, int]:
    """(sets, count): the timed input sets, `count` of them as fit INPUT_SETS_BYTES (2 to
    INPUT_SETS_MAX); with `needed` (count -> how many are used) only those first ones are drawn."""
    first = problems.make_inputs(module, "get_inputs", seed + 500, device)
    size = max(1, problems.tensor_bytes(first))
    count = max(2, min(INPUT_SETS_MAX, INPUT_SETS_BYTES // size))
    drawn = count if needed is None else max(1, min(count, needed(count)))
    return [first] + [problems.make_inputs(module, "get_inputs", seed + 501 + i, device)
                      for i in range(drawn - 1)], count


def _as64(value):
    return value.to(torch.float64) if isinstance(value, torch.Tensor) and value.is_floating_point() else value


# --- evaluate ---------------------------------------------------------------------------

def run_evaluate(job: dict, channel, exchange_fd: int) -> dict:
    """`correct` here only means that nothing in this process refused the kernel: the parent
    believes it once the trusted judge has passed the outputs in `exchange`."""
    result = {"status": "correct", "reason": "", "precision": None, "compile": {"seconds": None, "log": ""},
              "correctness": None, "timing": None, "device_fault": False, "phases": {}}
    beats = watchdog.Beats(channel.send)
    try:
        _evaluate(job, channel, result, beats, Writer(exchange_fd))
    except Verdict as verdict:
        result["status"], result["reason"] = verdict.status, verdict.reason
        extra = dict(verdict.extra)
        if "compile" in extra:
            result["compile"]["log"] = extra.pop("compile")["log"]
        result.update(extra)
    finally:
        beats.stop()
    return result


def _evaluate(job: dict, channel, result: dict, beats, writer: Writer) -> None:
    machine.warm_dispatch()
    device, seed, allow_library = job["device"], job["seed"], job["allow_library"]
    if job.get("stop_after") != "build":  # the profiler's first start takes seconds: before the snapshot
        launches.prepare(device)  # and the device, not inside the first recorded call
    if device == "cuda":  # a wait for the GPU counts against the call's limit from call 1 on
        # torch.cuda.synchronize itself stays PyTorch's: Dynamo knows it by identity and would trace a
        # replacement (a fullgraph compile then fails); it waits through torch._C._cuda_synchronize
        for owner, name in ((torch._C, "_cuda_synchronize"), (torch.cuda.Stream, "synchronize"),
                            (torch.cuda.Event, "synchronize")):
            beats.count_waits(owner, name)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    torch.backends.cuda.matmul.allow_tf32 = False  # the correctness reference runs without TF32
    torch.backends.cudnn.allow_tf32 = False
    runner_flags = globalstate.backend_flags()

    module = problems.load_module(job["problem_source"], ROOT / "problem.py", "kernellab_problem")
    problems.check_problem_module(module)
    init = list(module.get_init_inputs())
    reference = problems.build_model(module.Model, init, seed, device)

    guarded = verify.snapshot(), globalstate.watched()
    counter = launches.LaunchCounter([str(ROOT)])
    counter.install()
    counter.watch(job["kernel_source"], device)  # judging: driver-level launch accounting (CUDA)
    if "cpp_extension" in job["kernel_source"]:
        counter.install_extension_hook()
    phases, mark = result["phases"], _perf_counter()
    new = beats.wrap(_build_candidate(job, module, init, seed, device, reference, result))
    phases["build_s"], mark = _perf_counter() - mark, _perf_counter()
    if job.get("stop_after") == "build":  # a draft's compile check (the agent's tool): nothing is run
        return
    channel.request_device(untimed=True)  # the trials are never timed: a GPU may be shared until the timing
    phases["device_wait_s"], mark = _perf_counter() - mark, _perf_counter()
    _guard(guarded)
    counter.wrap_extensions()

    shape_inputs = problems.make_inputs(module, "get_inputs", seed, device)
    with torch.no_grad():
        expected_outputs = problems.as_outputs(reference(*shape_inputs))
    expected = [{"shape": tuple(o.shape), "dtype": o.dtype, "device": o.device.type} for o in expected_outputs]
    tolerance = problems.tolerance(expected_outputs, module, job.get("atol"), job.get("rtol"), job.get("rule"))
    del expected_outputs, shape_inputs
    shipped = result["exchange"] = {"distributions": [], "calls": [], "swaps": [], "timed_calls": 0}
    ship = Shipper(writer, channel, reference, tolerance, fp32_truth=rules.kernelbench(job.get("rule")))

    state = {"first": True, "ops": []}

    def run_candidate(inputs, given=None):
        """One recorded call on fresh copies of inputs (or on `given`, holding the same data), checked."""
        given = verify.copies(inputs) if given is None else given
        verify.poison([(e["shape"], e["dtype"]) for e in expected], device)
        threads = verify.thread_count()
        with torch.no_grad():
            outputs = _call(new, given, state, counter, allow_library, sync)
        verify.check_no_new_threads(threads)
        _guard(guarded)
        outs = verify.check_output_form(outputs, expected)
        verify.check_not_mutated(inputs, given)
        verify.check_no_alias(outs, given)
        return outs

    counted = rules.trials(job.get("rule"), problems.TRIALS)
    for index, name in enumerate(problems.DISTRIBUTIONS):  # the index seeds the inputs, as truths.py draws them
        if name in counted:
            shipped["distributions"].append(_run_distribution(module, name, index, seed, device, run_candidate, ship,
                                                              counted[name]))
    phases["correctness_s"], mark = _perf_counter() - mark, _perf_counter()
    if job.get("stop_after") == "correctness":  # a draft's check (the agent's tool): judged, not timed
        return
    result["precision"] = verify.detect_precision(job["kernel_source"], state["ops"], [e["dtype"] for e in expected])
    waited = _perf_counter()
    channel.request_device()  # alone from here on: the timing, the batch clock, the flags' own baseline
    phases["device_wait_s"] += _perf_counter() - waited
    mark = _perf_counter()
    result["timing"] = _time_candidate(module, new, device, seed, run_candidate, guarded, channel, ship,
                                       expected, shipped, paired=bool(job.get("paired")) and device == "cpu")
    phases["timing_s"] = _perf_counter() - mark
    if device == "cuda":  # the profile's build resources (runner/inside/kernelattrs.py), never part of the verdict
        result["build"] = kernelattrs.collect_or_none(
            new, lambda: problems.make_inputs(module, "get_inputs", seed, "cuda"), counter.built,
            ROOT / "kernellab-profile.json")
    if state.get("fell_back") and state.get("own_calls"):  # library mode: timed as what it is, with the note
        call, ops, caught = state["fell_back"]
        result["fallback"] = (f"fell back to PyTorch on untimed call {call} of {state['calls']} ({', '.join(ops)}): "
                              "its own kernel did not run there" + (f", after it caught {caught}" if caught else ""))
    kernel_flags = {k: v for k, v in globalstate.backend_flags().items() if v != runner_flags[k]}
    if kernel_flags:  # eager under the flags the kernel set: their own effect is never the kernel's credit
        result["flag_baseline"] = _eager_under_flags(module, reference, device, seed, channel, kernel_flags)


def _eager_under_flags(module, reference, device: str, seed: int, channel, flags: dict) -> dict:
    sets, _ = input_sets(module, device, seed)
    try:
        with torch.no_grad():
            measured = measure(channel, "eager_flags", device, reference, sets)
    except BaseException as exc:
        raise _classify(exc, during="timing eager under the kernel's flags") from None
    return {"flags": flags, "eager_ms": timing.summarize(measured["samples_ms"])["median_ms"]}


def _build_candidate(job, module, init, seed, device, reference, result):
    started = _perf_counter()
    try:
        kernel = problems.load_module(globalstate.vetted(job), ROOT / "kernel.py", "kernellab_kernel")
        if not isinstance(getattr(kernel, "ModelNew", None), type):
            raise Verdict("rejected", "the kernel defines no class ModelNew")
        torch.manual_seed(seed)
        new = kernel.ModelNew(*init).to(device)
        if not rules.kernelbench(job.get("rule")):  # KernelBench's rule: both built under one seed, nothing copied
            own = new.state_dict()
            torch.nn.Module.load_state_dict(new, {k: v for k, v in reference.state_dict().items()
                                                  if k in own and own[k].shape == v.shape}, strict=False)
        new.eval()
    except Verdict:
        raise
    except BaseException as exc:  # SystemExit from a candidate too
        result["compile"]["seconds"] = round(_perf_counter() - started, 4)
        raise _classify(exc, during="building the kernel") from None
    result["compile"]["seconds"] = round(_perf_counter() - started, 4)
    return new


def _call(new, given, state, counter, allow_library, sync):
    """One untimed call of the candidate, its aten ops and own-kernel launches recorded.
    Every untimed call is recorded (not only the first), so a kernel cannot compute with
    PyTorch on the calls after the first one it expects to be watched."""
    try:
        recorder = dispatchmode.LibraryOpRecorder() if allow_library else dispatchmode.OpRecorder()
        swallowed = verify.Swallowed(str(ROOT / "kernel.py"))
        counter.calls = 0
        counter.active = True
        try:
            with counter.launches.recording():  # its marker goes right after forward returns, before any wait
                with recorder, swallowed:
                    outputs = new(*given)
            sync()
        finally:
            counter.active = False
        if state["first"]:
            state["first"] = False
            state["ops"] = recorder.ops
        state["calls"] = state.get("calls", 0) + 1
        # a CUDA graph's replay runs the kernels it captured through no launcher the counter wraps
        own = counter.calls + counter.launches.own_launched()
        # judging: the rules and their reason codes live in verify.library_use and runner/common/launches.py
        if allow_library:  # which calls ran a kernel of its own, which only PyTorch (a fallback that ran)
            computing = verify.computing_ops(recorder.ops)
            if own:
                state["own_calls"] = state.get("own_calls", 0) + 1
            elif computing and "fell_back" not in state:
                state["fell_back"] = (state["calls"], [findings.aten_name(op) for op in computing[:5]],
                                      swallowed.found)
        found = None if allow_library else verify.library_use(recorder.ops, own, state["calls"])
        found = found or counter.launches.finding(allow_library=allow_library, call=state["calls"])
        if found:
            reason = found.reason + (f" (after it caught an exception, {swallowed.found})" if swallowed.found else "")
            raise Verdict("rejected", reason, reason_code=found.code)
        return outputs
    except (Verdict, verify.Rejected):
        raise
    except BaseException as exc:
        raise _classify(exc, during="running forward") from None


def _run_distribution(module, name, index, seed, device, run_candidate, ship, count) -> dict:
    """The candidate's outputs on one distribution's trials (the inputs truths.py draws the same
    way), into the exchange memory; a distribution without floating inputs is not run."""
    row = {"name": name, "trials": []}
    for trial in range(count):
        inputs = problems.make_inputs(module, name, seed + 1000 * index + trial, device)
        if name != "get_inputs" and not problems.has_floating_input(inputs):
            break
        try:
            outs = run_candidate(inputs)
        except verify.Rejected as exc:
            raise Verdict("rejected", str(exc)) from None
        try:
            row["trials"].append(ship(f"trial/{name}/{trial}", outs, whole=(name, inputs)))
        except BaseException as exc:
            raise _classify(exc, during="comparing the outputs") from None
        del outs, inputs
    return row


def reference_err(reference, inputs, truths, atol, rtol) -> float:
    """err of PyTorch's fp32 reference (TF32 off); its outputs are dropped right here."""
    with torch.no_grad():
        outs = problems.as_outputs(reference(*verify.copies(inputs)))
    err, _ = verify.compare(outs, truths, atol, rtol)
    del outs
    return err


def truth_model(reference):
    try:
        return copy.deepcopy(reference).double()
    except Exception:
        return None


def truth(truth_model, reference, inputs) -> list:
    """The reference in float64 where it runs; else the fp32 reference. Float64 tensors
    never look like an output's memory, so they may stay on the device."""
    with torch.no_grad():
        if truth_model is not None:
            try:
                return problems.as_outputs(truth_model(*[_as64(v) for v in inputs]))
            except Exception:
                pass
        return problems.as_outputs(reference(*verify.copies(inputs)))


def _time_candidate(module, new, device, seed, run_candidate, guarded, channel, ship, expected, shipped, paired):
    sets, _ = input_sets(module, device, seed)
    form = [{"shape": list(e["shape"]), "dtype": str(e["dtype"])} for e in expected]
    keep = replay_.kept_sets(len(sets), form)

    def ship_call(i, inputs, outs):
        shipped["calls"].append({"call": i, "set": i % len(sets),
                                 "outputs": ship(f"call/{i}", outs, seed_key=f"set/{i % len(sets)}")})

    def ship_swap(data, into, outs):
        shipped["swaps"].append({"set": data, "into": into,
                                 "outputs": ship(f"swap/{len(shipped['swaps'])}", outs, seed_key=f"set/{data}")})

    # judging: the inputs' identity is no key to a result (runner/inside/replay.py's IdentitySwap), on the
    # untimed calls inside the loop and once after it
    swap = replay_.IdentitySwap(sets, keep, run_candidate, ship_swap)

    def untimed(i, inputs):
        swap(seen=i + 1, last=i % len(sets))  # first: the timed call just before it saw those storages
        run_candidate(inputs)

    # judging: timed calls' outputs sampled over the whole loop (runner/inside/replay.py), plain and dense;
    # the judge's request stays one socket message, and the checks spread over the longest loop
    limit = max(1, min(64, 512 // len(form),
                       replay_.SHIPPED_BYTES // max(1, replay_.output_bytes(form, shipped=True))))
    replay = replay_.LateReplay(ship_call, device=device, untimed=untimed,
                                eligible=lambda i: i % len(sets) < keep, limit=limit,
                                block=max(8, -(-timing.MAX_REPS // limit)))

    def call(*inputs):
        return replay_.materialised(new(*inputs))

    try:
        with torch.no_grad():
            measured = measure(channel, "candidate", device, call, sets, on_output=replay.see,
                               **({"pair": _pair(channel), "on_plan": replay.plan} if paired else {}))
    except BaseException as exc:
        raise _classify(exc, during="timing") from None
    _guard(guarded)
    try:  # one more recorded, untimed call once timing is over: the same kernel must still be at work
        calls = len(measured["samples_ms"])
        swap(seen=calls, last=(calls - 1) % len(sets))
        run_candidate(sets[-1])
    except verify.Rejected as exc:
        raise Verdict("rejected", str(exc)) from None
    with torch.no_grad():
        replay.finish()
    shipped["timed_calls"] = len(measured["samples_ms"])
    stats = timing.summarize(measured["samples_ms"])
    try:  # the parent's own clock over batches of calls (runner/host/batchclock.py)
        with torch.no_grad():
            timing.run_batches(channel, call, sets, device, stats["median_ms"])
    except BaseException as exc:
        raise _classify(exc, during="timing") from None
    return stats


def _pair(channel):
    """The candidate's side of a pairing (runner/host/pairing.py): before each block of timed calls, the
    parent times an eager block while this process waits."""
    def pair(calls: int, size: int | None) -> bool:
        channel.send("pair", calls=calls, **({"n": size} if size else {"at": "end"}))
        return channel.receive().get("go") is True

    return pair


class Shipper:
    """Outputs into the exchange memory for the trusted judge: whole, or as their sample
    (sampling.py) at positions the parent reveals only now that the output exists. A sampled
    correctness output is first compared here in full, with this sandbox's own truths: a check
    inside the candidate's process, so it can only refuse (an honest kernel wrong in a few
    elements the sample misses is still caught)."""

    def __init__(self, writer: Writer, channel, reference, tolerance, fp32_truth: bool = False):
        self.writer, self.channel, self.reference, self.tolerance = writer, channel, reference, tolerance
        # the float64 copy of the reference, made at first need; none where the truth is the fp32 reference
        self.truth_model, self.made = None, fp32_truth

    def __call__(self, key: str, outs: list, seed_key: str | None = None, whole=None) -> list[dict]:
        """`seed_key` names the outputs' sample seeds (a timed call's are its input set's); `whole`
        (distribution name, inputs) asks for the full comparison first."""
        if whole is not None and any(sampling.sampled(o.shape) for o in outs):
            self._compare_whole(outs, *whole)
        entries = []
        for k, out in enumerate(outs):
            if sampling.sampled(out.shape):
                self.channel.send("sample", key=f"{seed_key or key}/{k}")
                seed = self.channel.receive().get("seed")
                if not isinstance(seed, int):
                    raise RuntimeError("the parent gave no sample seed")
                out = sampling.take(out, seed)
            entries.append(self.writer.put(f"{key}/{k}", out))
        return entries

    def _compare_whole(self, outs: list, name: str, inputs) -> None:
        if not self.made:
            self.truth_model, self.made = truth_model(self.reference), True
        atol, rtol = self.tolerance
        if outs[0].is_cuda:  # the trial's freed fp32 blocks go back to the driver: the float64 truth needs
            torch.cuda.empty_cache()  # blocks twice their size, which the cache cannot carve from them
        truths = truth(self.truth_model, self.reference, inputs)
        ref_err = reference_err(self.reference, inputs, truths, atol, rtol)
        err, abs_err = verify.compare(outs, truths, atol, rtol)
        if not verify.passes(err, ref_err):  # the whole output, in its own process: where it is wrong may be said
            found = next((m for o, t in zip(outs, truths) if (m := verify.mismatch(o, t, atol, rtol, whole=True))["wrong"]),
                         None)
            raise Verdict("incorrect", findings.wrong_outputs(name, err, ref_err, abs_err, found))
        del truths


def _guard(guarded) -> None:
    """Nothing the runner relies on was patched, and torch's watched settings are the runner's."""
    patched, state = guarded
    try:
        verify.check_untouched(patched)
    except verify.Rejected as exc:
        raise Verdict("rejected", str(exc)) from None
    moved = globalstate.changed(state)
    if moved:
        raise Verdict("rejected", moved)


def _classify(exc: BaseException, *, during: str) -> Verdict:
    text = str(exc)
    lowered = text.lower()
    if isinstance(exc, Verdict):
        return exc
    if isinstance(exc, verify.Rejected):
        return Verdict("rejected", text)
    if out_of_memory(exc):
        return Verdict("oom", f"out of memory while {during}: {compiling.first_line(text, 200)}")
    # judging: Triton compiles on the first launch, in forward; its errors are compile errors all the same
    if (during == "building the kernel" or compiling.is_lazy_compile_error(exc)) and compiling.is_compile_error(exc):
        log = compiling.compile_log(exc)
        return Verdict("compile_error", f"the kernel did not compile: {compiling.first_errors(log, 200)}",
                       compile={"seconds": None, "log": log})
    device_fault = any(m in lowered for m in ("cuda error", "illegal memory", "illegal address",
                                               "device-side assert", "cudaerror", "cuda_error", "launch failure"))
    message = f"{type(exc).__name__} while {during}: {compiling.first_line(text, 240) or type(exc).__name__}"
    return Verdict("runtime_error", message, device_fault=device_fault,
                   log=compiling.short_traceback(exc))
