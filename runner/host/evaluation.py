"""Validating a problem and evaluating a kernel on a given pool of sandboxes: the parent's
side of a job. Plain Python: this side never imports torch or CUDA; all problem and kernel
code runs in sandbox processes (sandbox.py, jobs.py). Nothing that comes back from a
sandbox is used before schema.py has checked it. The public API is api.py.

An evaluation takes two sandboxes at once: one runs only the problem and makes the truths
(truths.py), the other runs the candidate and ships its outputs (jobs.py); the trusted judge
(referee.py) compares them, and the batch clock (batchclock.py) checks the reported times. A
candidate's sandbox may report its own failure; `correct` is decided here, never there.
"""

from __future__ import annotations

import os
import random
import secrets
import time
from concurrent.futures import ThreadPoolExecutor

from . import baselines, batchclock, buildcache, gpumem, phases, quarantine, schema
from ..common import exchange, findings, roofline, rules, watchdog
from ..common import counters as hardware_counters
from .pairing import Pairing
from ..common import compile as compiling
from .checks import check_findings, deferred_internals
from ..common.errors import DeviceBusy, ProblemInvalid, RunnerError
from ..common.version import RUNNER_VERSION, SCHEMA

DEVICES = ("cpu", "cuda")
# How a correct result timed on a disturbed device begins its quarantine reason: the app lifts
# such a quarantine on a quiet rerun (searches.services.kernels).
NOISY_QUARANTINE = "timed on a disturbed device"
FAULTS = ("runtime_error", "crashed", "timeout", "oom")
OOM_ATTEMPTS = 3  # a validation out of device memory is run again this many times in all
OOM_PAUSE_S = 2.0  # between them: time for whoever holds the memory to let go
EARLY_SHARE = 0.5  # of a GPU's free memory, for the validations' work before their device wait, all together


# --- validate -------------------------------------------------------------------------------

def validate(pool, problem_source: str, *, device: str = "cpu", timeout: float = 300.0,
             seed: int | None = None, more_baselines=()) -> dict:
    """`more_baselines`: any of baselines.EXTRA, timed beside eager and torch.compile's default."""
    check_device(device)
    seed, more = _seed(seed), baselines.extra(more_baselines)
    job = {"job": "validate", "device": device, "seed": seed, "problem_source": problem_source,
           "compile_baseline": _compile_baseline(), "more_baselines": list(more),
           # the device memory its work before the device wait may take (validation.fits_before_device):
           # half of what is free over the pool's sandboxes, each of which may be doing the same
           "early_share": EARLY_SHARE / max(1, getattr(pool, "size", 1))}
    for attempt in range(1, OOM_ATTEMPTS + 1):
        result = _validate_once(pool, job, problem_source, device, timeout, more)
        if result["status"] != "oom":
            return result
        if attempt < OOM_ATTEMPTS:
            job["alone"] = True  # all of its device work holding the device from now on
            time.sleep(OOM_PAUSE_S * attempt)
    raise DeviceBusy(f"the device ran out of memory validating the problem {OOM_ATTEMPTS} times "
                     f"({result['reason']}); other work may hold its memory: the problem is not judged")


def _validate_once(pool, job: dict, problem_source: str, device: str, timeout: float, more: tuple) -> dict:
    result = empty_validation()
    outcome, sandbox = _run(pool, job, timeout, on_phase=getattr(pool, "phase", None))
    result["environment"] = environment_of(sandbox, pool)
    if outcome.result is None:
        result.update(status="invalid", reason=f"the problem could not be run: {outcome.reason}")
        return result
    try:
        raw = schema.validation(outcome.result)
    except schema.Malformed as exc:
        result.update(status="invalid", reason=f"the sandbox sent a malformed validation ({exc}); none of it is used")
        return result
    result["status"], result["reason"] = raw["status"], raw["reason"]
    limited = sandbox.limit_hit("runtime_error", raw["reason"]) if raw["status"] != "ok" else None
    if limited:  # the sandbox's own limit, not someone else's memory: the problem is at fault
        result["status"], result["reason"] = "invalid", f"the problem could not be run: {limited[1]}"
    for name in ("outputs", "family", "flops", "flops_upper_bound", "min_bytes", "phases", "degenerate"):
        result[name] = raw.get(name)
    result["baseline"].update(raw["baseline"])
    timed = ("eager", "compile") + more
    result["measurements"] = sandbox.measurements.of(*timed)
    result["noisy"] = sandbox.measurements.noisy(*timed)
    if result["status"] == "ok" and not result["noisy"]:  # a noisy baseline is measured again next time
        cache_key = baselines.key(problem_source, device, result["environment"], _compile_baseline(), more)
        baselines.store(cache_key, result)
    return result


def empty_validation() -> dict:
    return {"schema": SCHEMA, "status": "invalid", "reason": "", "outputs": None, "family": None, "flops": None,
            "flops_upper_bound": None, "min_bytes": None, "degenerate": None,
            "baseline": {"eager_ms": None, "compile_ms": None, "compile_mode": None},
            "environment": environment_of(None, None), "phases": {}, "measurements": [], "noisy": None}


# --- evaluate -------------------------------------------------------------------------------

def evaluate(pool, problem_source: str, kernel_source: str, *, device: str = "cpu", seed: int | None = None,
             timeout: float = 300.0, atol: float | None = None, rtol: float | None = None,
             allow_library: bool = False, rule: str | None = None, more_baselines=(), compile_only: bool = False,
             untimed: bool = False, counters: bool = False) -> dict:
    """The verdict on a kernel; `compile_only`: whether it passes the static rules and builds (status
    "compiled"), nothing run or judged (a draft's check for the agent's `compile` tool); `untimed`: its
    correctness judged by the trusted judge, nothing timed (the agent's `check`); `counters`: on the GPU,
    Nsight Compute's counters of one call in its profile (a profile on demand)."""
    check_device(device)
    more = baselines.extra(more_baselines)
    rule = rules.resolve(rule)
    seed = _seed(seed)
    result = empty_verdict(seed)
    result["rule"] = rules.describe(rule)
    result["environment"] = environment_of(None, pool)

    found = check_findings(kernel_source, reference_source=problem_source, allow_library=allow_library,
                           device=device)
    result["advisories"] = [{"reason": f.reason, "code": f.code} for f in found if f.advisory]
    if len(result["advisories"]) < len(found):  # judging: the first refusal, with its code (runner/common/findings.py)
        result.update(status=found[0].status, reason=found[0].reason, reason_code=found[0].code)
        return result

    environment = pool.current_environment()
    validation = _cached_validation(problem_source, device, environment, pool, timeout, seed, more)
    if validation["status"] != "ok":
        raise ProblemInvalid(f"the problem is invalid: {validation['reason']}")
    job = {"job": "evaluate", "device": device, "seed": seed, "problem_source": problem_source,
           "kernel_source": kernel_source, "atol": atol, "rtol": rtol, "allow_library": bool(allow_library),
           "rule": rule,
           "call_limit_s": watchdog.limit_s(validation["baseline"].get("eager_ms")),
           "paired": device == "cpu" and not untimed,  # eager timed between the candidate's blocks (pairing.py)
           "counters": bool(counters) and device == "cuda" and not untimed,
           "internals": deferred_internals(kernel_source)}  # refused in the sandbox where this PyTorch has them
    if untimed:
        job["stop_after"] = "correctness"
    for attempt in range(1, OOM_ATTEMPTS + 1):
        try:
            if compile_only:
                return {**_build_only(pool, {**job, "stop_after": "build", "paired": False}, timeout),
                        "advisories": result["advisories"]}
            judged = _judge(pool, job, validation, environment, timeout)
            if judged.pop("wall_clock_refused", False):
                judged = _judge_again(pool, job, validation, environment, timeout, judged)
            if job["counters"] and judged["status"] == "correct" and judged.get("profile"):
                add_counters(pool, job, judged, timeout)
            judged["advisories"], judged["rule"] = result["advisories"], result["rule"]
            return judged
        except _DeviceFull as exc:
            if attempt == OOM_ATTEMPTS:
                raise DeviceBusy(f"the evaluation ran out of device memory {OOM_ATTEMPTS} times within its own share "
                                 f"({exc}): other work held the rest, so the kernel is not judged") from None
            job["alone"] = True  # its untimed work may not fit beside others' (runner/host/devicelock.py)
            time.sleep(OOM_PAUSE_S * attempt)


def _judge_again(pool, job: dict, validation: dict, environment: dict, timeout: float, refused: dict) -> dict:
    """A time the parent's wall clock refused is judged once more, in a fresh sandbox, before anyone is called
    a cheat: a busy moment of the host (sandboxes warming up beside it, the parent's threads kept from a CPU)
    can stretch the batches, while a forged time stays forged. The second verdict stands, the first refusal
    in its `judged_again`."""
    again = _judge(pool, job, validation, environment, timeout)
    again["judged_again"] = f"the parent's clock refused the time of a first evaluation: {refused['reason']}"
    if again.pop("wall_clock_refused", False):
        again["reason"] += "; the same in a second evaluation, in a fresh sandbox"
    return again


class _DeviceFull(Exception):
    """An `oom` that other work on the device caused: the candidate's (gpumem.others_fault), or the truths'."""


def _judge(pool, job: dict, validation: dict, environment: dict, timeout: float) -> dict:
    """One run of the candidate beside its truths, judged."""
    device = job["device"]
    result = empty_verdict(job["seed"])
    result["baseline"] = dict(validation["baseline"])
    sample_secret = secrets.token_bytes(16)  # the positions of large outputs' samples (sampling.py)
    truths_job = {"job": "truths", "device": device, "seed": job["seed"], "problem_source": job["problem_source"],
                  "atol": job["atol"], "rtol": job["rtol"], "rule": job["rule"], "sample_secret": sample_secret.hex(),
                  "paired": job["paired"], "alone": job.get("alone", False)}
    pairing = Pairing() if job["paired"] else None
    truths_sandbox = pool.take()
    try:
        sandbox = pool.take()
    except BaseException:
        truths_sandbox.discard()
        raise
    truths_fd, outputs_fd = truths_sandbox.take_exchange(), sandbox.take_exchange()
    # load_inline builds (runner/host/buildcache.py): restored before the job, published after the sandbox exits
    builds = buildcache.Builds(sandbox, job, environment)
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="truths") as side:
            made = side.submit(_truths, truths_sandbox, truths_job, timeout, pairing)  # made meanwhile
            try:
                outcome = sandbox.run(job, timeout, sample_secret=sample_secret, pairing=pairing,
                                      on_phase=getattr(pool, "phase", None))
            finally:
                if pairing is not None:
                    pairing.close()
            made = made.result()
        builds.finish(outcome.result if isinstance(outcome.result, dict) else None)
        result["build_cache"] = builds.describe()
        result["environment"] = environment_of(sandbox, pool)
        _candidate_verdict(result, outcome, sandbox, built_only=bool(job.get("stop_after")))
        if result["status"] == "oom" and sandbox.gpu_cap_mb and sandbox.gpu_exceeded_mb is None:
            others = gpumem.others_fault(f"{result['reason']}\n{result['log']}\n{outcome.stderr}", sandbox.gpu_cap_mb)
            if others:
                raise _DeviceFull(others)
        if result["status"] == "correct":
            mark = time.monotonic()
            if hasattr(pool, "phase"):
                pool.phase(phases.JUDGING)
            _referee(pool, result, made, truths_fd, outputs_fd, sandbox, timeout, untimed=bool(job.get("stop_after")))
            result["phases"]["judge_s"] = time.monotonic() - mark
            if result["status"] != "correct":  # timed, but only a correct kernel's time means anything
                result["timing"] = None
            elif pairing is not None:
                result["paired"] = pairing.summary(result["timing"]["samples_ms"])
                result["phases"]["paired_eager_s"] = pairing.eager_s
        if result["status"] == "incorrect" and _tf32_on(result.get("flag_baseline")):
            result["reason"] += ("; the kernel turned TF32 on, and TF32's rounding is judged by the same "
                                 "tolerance as fp32 (which it mostly exceeds)")
    finally:
        os.close(truths_fd)
        os.close(outputs_fd)
    result["limits"] = sandbox.describe_limits()
    result["measurements"] = sandbox.measurements.of("candidate", "batch")  # clocks and disturbance per try
    noisy = [why for why in (sandbox.measurements.noisy("candidate"), validation.get("noisy"),
                             result.pop("batch_noisy", None)) if why]
    result["noisy"] = "; ".join(noisy) or None
    result["phases"].update(sandbox_s=outcome.seconds, warm_wait_s=sandbox.warm_wait + builds.warm_wait_s)
    if sandbox.ready_s is not None:  # how long the candidate's sandbox took to warm up (the pool's refill time)
        result["phases"]["warm_up_s"] = sandbox.ready_s
    build = result.pop("build", None)
    if result["status"] == "correct" and result["timing"]:
        _speedups(result, validation, device)
        if rules.kernelbench(job["rule"]):
            result["kernelbench"] = kernelbench_speedup(result)
        result["profile"] = profile_of(result, validation, device, build)
    if result["noisy"] and result["status"] == "correct" and not result["quarantined"]:
        # Kept and shown, but out of every ranking (as quarantined kernels are) until run again.
        result["quarantined"] = True
        result["quarantine_reason"] = f"{NOISY_QUARANTINE}, run it again on a quiet one: {result['noisy']}"
    if device == "cuda" and (result["status"] in ("crashed", "timeout")
                             or (result["status"] == "runtime_error" and (outcome.result or {}).get("device_fault"))):
        health_check(pool)
    return result


def _build_only(pool, job: dict, timeout: float) -> dict:
    """The candidate's sandbox loads and builds it, then stops: no truths, no judge, no timing."""
    result = empty_verdict(job["seed"])
    sandbox = pool.take()
    outputs_fd = sandbox.take_exchange()
    try:
        outcome = sandbox.run(job, timeout)
    finally:
        os.close(outputs_fd)
    result["environment"] = environment_of(sandbox, pool)
    _candidate_verdict(result, outcome, sandbox, built_only=True)
    result.pop("build", None)
    result["exchange"] = result["timing"] = None
    if result["status"] == "correct":  # the sandbox refused nothing: that is all a build says
        result.update(status="compiled", reason="it built")
    return result


def _tf32_on(flag_baseline: dict | None) -> bool:
    flags = (flag_baseline or {}).get("flags") or {}
    return bool(flags.get("cudnn.allow_tf32") or flags.get("cuda.matmul.allow_tf32")
                or flags.get("float32_matmul_precision") in ("high", "medium"))


def _truths(sandbox, job: dict, timeout: float, pairing):
    try:
        return sandbox.run(job, timeout, pairing=pairing)
    finally:
        if pairing is not None:
            pairing.gone()


def _candidate_verdict(result: dict, outcome, sandbox, built_only: bool = False) -> None:
    """What the candidate's sandbox said, where believable: its own failures are; a `correct` here
    only means that the trusted judge is to decide, from the outputs in `exchange`."""
    started(outcome)
    result["exchange"] = None
    if outcome.result is None:
        result.update(status=outcome.status, reason=outcome.reason,
                      log=compiling.trim(outcome.stderr[-6000:]) if outcome.stderr else "")
        return
    try:
        raw = schema.evaluation(outcome.result, built_only)
    except schema.Malformed as exc:
        raw = {"status": "rejected", "reason": f"the sandbox sent a malformed verdict ({exc}); none of it is used",
               "reason_code": findings.RULE}
    for name in ("status", "reason", "reason_code", "precision", "compile", "timing", "phases", "log", "exchange",
                 "flag_baseline", "fallback", "build"):
        if name in raw:
            result[name] = raw[name]
    limited = sandbox.limit_hit(result["status"], result["reason"], log=result["log"])
    if limited:
        result["status"], result["reason"] = limited


def _referee(pool, result: dict, made, truths_fd: int, outputs_fd: int, sandbox, timeout: float,
             untimed: bool = False) -> None:
    """`correct` or not, decided outside both sandboxes: the trusted judge's comparison, then the
    batch clock's check of the reported times."""
    shipped, result["exchange"] = result.pop("exchange"), None
    if made.result is None:
        raise RunnerError(f"the truths could not be made: {made.reason}")
    try:
        truths = schema.truths(made.result)
    except schema.Malformed as exc:
        raise ProblemInvalid(f"the problem's sandbox sent malformed truths ({exc})") from None
    if truths["status"] != "ok":
        raise (_DeviceFull if truths["status"] == "oom" else ProblemInvalid)(
            f"the problem could not make the truths: {truths['reason']}")
    result["phases"].update(truths["phases"])  # the truths' sandbox: waiting for, then holding the device
    try:
        exchange.seal(truths_fd)
    except exchange.Unusable as exc:
        raise ProblemInvalid(f"the problem's sandbox left unusable truths ({exc})") from None
    try:
        exchange.seal(outputs_fd)
        if shipped is None:
            raise exchange.Unusable("the candidate's sandbox sent no outputs")
        request = {"truths": truths, "outputs": shipped, **({"untimed": True} if untimed else {})}
        reply = pool.referee.judge(request, truths_fd, outputs_fd, timeout)
        if "unusable" in reply or "error" in reply:
            raise exchange.Unusable(str(reply.get("unusable") or reply.get("error"))[:400])
        result["correctness"] = schema.correctness(reply["correctness"])
        failure, swapped = reply["replay"]["failure"], reply["swap"]["failure"]
    except (exchange.Unusable, schema.Malformed, KeyError, TypeError) as exc:
        result.update(status="rejected", reason_code=findings.RULE, correctness=None,
                      reason=f"the trusted judge could not use the candidate's outputs: {exc}")
        return
    rows = result["correctness"]["per_distribution"]
    if not result["correctness"]["passed"]:
        worst = next(r for r in rows if r["passed"] is False)
        result.update(status="incorrect", reason=findings.wrong_outputs(worst["name"], worst["err"],
                                                                      worst["ref_fp32_err"], worst["max_abs_err"],
                                                                      worst.get("mismatch")))
        return
    if failure:
        result.update(status="incorrect", reason=f"timed call {failure[0]} of {shipped['timed_calls']} returned a "
                      f"wrong result (err {findings.figure(failure[1])}) on its inputs; results must be computed on "
                      f"every call, not cached or replayed ({reply['replay']['checked']} timed calls checked)")
        return
    if swapped:  # every timed call right, wrong on its own storages with new data: identity, not data
        result.update(status="incorrect", reason=(
            f"given the storages of input set {swapped[1] + 1} holding set {swapped[0] + 1}'s data, it returned a "
            f"wrong result (err {findings.figure(swapped[2])}): results must come from the inputs' data, not from "
            "their identity (a cache keyed on id(), data_ptr() or `is` returns what it stored for those storages)"))
        return
    if untimed:  # a draft's check: its correctness is all it asked
        return
    batchclock.apply(sandbox.batches, sandbox.measurements.records, result)


def empty_verdict(seed: int | None) -> dict:
    return {"schema": SCHEMA, "status": "runtime_error", "reason": "", "reason_code": None, "quarantined": False,
            "quarantine_reason": None, "seed": seed, "precision": None, "compile": {"seconds": None, "log": ""},
            "correctness": None, "timing": None,
            "baseline": {"eager_ms": None, "compile_ms": None, "compile_mode": None},
            "speedup_vs_eager": None, "speedup_vs_compile": None, "environment": environment_of(None, None),
            "log": "", "phases": {}, "limits": None, "measurements": [], "noisy": None,
            "build_cache": None, "paired": None, "flag_baseline": None, "fallback": None, "advisories": [],
            "profile": None, "rule": None, "kernelbench": None, "speedup_vs_more": None, "judged_again": None}


def _speedups(result: dict, validation: dict, device: str) -> None:
    median = result["timing"]["median_ms"]
    baseline, paired = result["baseline"], result.get("paired")
    if paired and not paired["dropped"]:  # the eager blocks timed beside the candidate's (CPU)
        result["speedup_vs_eager"] = paired["speedup"]
    elif baseline.get("eager_ms"):
        result["speedup_vs_eager"] = baseline["eager_ms"] / median
    flagged = result.get("flag_baseline")
    if flagged:  # the kernel changed backend flags: eager under the same flags counts when faster
        baseline["eager_flags_ms"], baseline["flags"] = flagged["eager_ms"], flagged["flags"]
        matched = flagged["eager_ms"] / median
        if result.get("speedup_vs_eager") is None or matched < result["speedup_vs_eager"]:
            result["speedup_vs_eager"] = matched
    if baseline.get("compile_ms"):
        result["speedup_vs_compile"] = baseline["compile_ms"] / median
    if baseline.get("more"):  # the extra baselines asked for, over the same median (none where skipped)
        result["speedup_vs_more"] = {kind: (row["ms"] / median if row.get("ms") else None)
                                     for kind, row in baseline["more"].items()}
    floor = quarantine.floor_ms(device, result["environment"].get("device_name"), validation.get("flops"),
                                validation.get("min_bytes"))
    flagged, why = quarantine.judge(median, baseline, floor)
    result["quarantined"], result["quarantine_reason"] = flagged, (why or None)


def kernelbench_speedup(result: dict) -> dict:
    """KernelBench's statistic beside the median: the mean of the timed calls, over the eager
    baseline's mean (the validation's; on the CPU the paired eager blocks are medians only)."""
    mean, eager = result["timing"]["mean_ms"], result["baseline"].get("eager_mean_ms")
    return {"mean_ms": mean, "eager_mean_ms": eager, "speedup_vs_eager": eager / mean if eager and mean else None}


def profile_of(result: dict, validation: dict, device: str, build: dict | None) -> dict:
    """The no-privilege profile (runner/common/roofline.py) of a correct kernel; its build's figures come
    from the candidate's sandbox, so they inform and never judge."""
    device_facts = dict((build or {}).get("device") or {})
    device_facts["name"] = result["environment"].get("device_name")  # the runner's, not the sandbox's word
    return roofline.profile(device=device, kernels=(build or {}).get("kernels"), device_facts=device_facts,
                            median_ms=result["timing"]["median_ms"], flops=validation.get("flops"),
                            min_bytes=validation.get("min_bytes"), precision=result.get("precision"),
                            counters=hardware_counters.status()["note"] if device == "cuda" else None)


def add_counters(pool, job: dict, result: dict, timeout: float) -> None:
    """A counters job (runner/inside/ncuprofile.py) in a fresh sandbox after the verdict, so nothing it does
    can change it: the profile's `counters` line and `counter_kernels`, or why there are none."""
    outcome, _ = _run(pool, {"job": "counters", "device": job["device"], "seed": job["seed"],
                             "problem_source": job["problem_source"], "kernel_source": job["kernel_source"]}, timeout)
    try:
        raw = schema.counters_job(outcome.result)
    except schema.Malformed as exc:
        reason = f"the sandbox sent no counters ({exc})" if outcome.result is not None else outcome.reason
        read = {"status": "failed", "note": f"{roofline.COUNTERS_UNAVAILABLE}: {reason}"}
    else:
        read = hardware_counters.read_profile(raw["returncode"], raw["output"])
    result["profile"]["counters"] = hardware_counters.profile_text(read)
    if read["status"] == "ok":
        result["profile"]["counter_kernels"] = read["kernels"]
        roofline.with_counters(result["profile"], read["kernels"])


def _cached_validation(problem_source, device, environment, pool, timeout, seed, more=()) -> dict:
    """The problem's validation (with baselines) from the cache, else run now."""
    cache_key = baselines.key(problem_source, device, environment, _compile_baseline(), more)
    cached = baselines.load(cache_key)
    if cached is not None:
        return cached
    return validate(pool, problem_source, device=device, timeout=timeout, seed=seed, more_baselines=more)


def health_check(pool) -> None:
    """After a fault on the GPU: a fresh sandbox must compute correctly before the next
    candidate runs there."""
    for _ in range(2):
        outcome = pool.take().run({"job": "health", "device": pool.device}, 60.0)  # not starting fails it too
        try:
            if outcome.result is not None and schema.health(outcome.result)["status"] == "ok":
                return
        except schema.Malformed:
            pass
    raise RunnerError("the GPU failed its health check after a faulty kernel: "
                      f"{(outcome.result or {}).get('reason') or outcome.reason}")


# --- helpers --------------------------------------------------------------------------------

def _run(pool, job: dict, timeout: float, on_phase=None):
    sandbox = pool.take()
    outcome = sandbox.run(job, timeout, on_phase=on_phase)
    started(outcome)
    return outcome, sandbox


def started(outcome) -> None:
    """A sandbox that never got warm ran nothing of the job: the host's failure (memory, the device, a
    broken install), never a verdict on the problem or the kernel, so the job is run again elsewhere."""
    if not outcome.started:
        raise RunnerError(f"a sandbox could not start, so nothing was run: {outcome.reason}")


def environment_of(sandbox, pool) -> dict:
    env = None
    if sandbox is not None and sandbox.environment:
        env = dict(sandbox.environment)
        if pool is not None:
            pool.environment = env
    elif pool is not None and pool.environment:
        env = dict(pool.environment)
    base = {"device_name": None, "torch": None, "cuda": None, "driver": None, "python": None,
            "runner_version": RUNNER_VERSION}
    base.update(env or {})
    return base


def _seed(seed: int | None) -> int:
    return int(seed) if seed is not None else random.SystemRandom().randrange(2**31)


def check_device(device: str) -> None:
    if device not in DEVICES:
        raise RunnerError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")


def _compile_baseline() -> bool:
    """KERNELLAB_BASELINE_COMPILE=0 skips the torch.compile baseline (fast test runs); the
    result then says compile_mode null."""
    return os.environ.get("KERNELLAB_BASELINE_COMPILE", "1") not in ("0", "false", "no")
