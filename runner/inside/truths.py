"""The truths of one evaluation, made in a sandbox that runs only the problem (never the
candidate): for each correctness trial and each timed input set, the reference's float64
result and PyTorch's own fp32 error on it, written to the sandbox's exchange memory
(exchange.py) for the trusted judge (referee.py). Runs only inside a sandbox process.

Inputs are not shipped: the candidate's sandbox makes the same ones from the same seeds
(problem.make_inputs), and a candidate that computes on other inputs only fails itself.
"""

from __future__ import annotations

import time

import torch

from . import jobs, replay
from ..common import rules, sampling, timing
from . import problem as problems
from ..common.exchange import Writer


def run(job: dict, channel, exchange_fd: int) -> dict:
    device, seed = job["device"], job["seed"]
    torch.backends.cuda.matmul.allow_tf32 = False  # as the candidate's correctness reference
    torch.backends.cudnn.allow_tf32 = False
    try:
        module = problems.load_module(job["problem_source"], jobs.ROOT / "problem.py", "kernellab_problem")
        problems.check_problem_module(module)
        reference = problems.build_model(module.Model, list(module.get_init_inputs()), seed, device)
        rule = job.get("rule")
        # KernelBench's truth is the fp32 reference on this device: no float64 copy, so truth() runs it
        truth_model = None if rules.kernelbench(rule) else jobs.truth_model(reference)
        asked = time.monotonic()
        channel.request_device(untimed=True)  # apart from any timing; beside other untimed work on a GPU
        granted = time.monotonic()
        with torch.no_grad():
            outputs = problems.as_outputs(reference(*problems.make_inputs(module, "get_inputs", seed, device)))
        atol, rtol = problems.tolerance(outputs, module, job.get("atol"), job.get("rtol"), rule)
        expected = [{"shape": list(o.shape), "dtype": str(o.dtype).replace("torch.", "")} for o in outputs]
        del outputs
        writer = Writer(exchange_fd)
        secret = bytes.fromhex(job["sample_secret"])
        counted = rules.trials(rule, problems.TRIALS)
        distributions = [_distribution(module, name, index, seed, device, reference, truth_model, writer, atol, rtol,
                                       expected, secret, counted[name], rule)
                         for index, name in enumerate(problems.DISTRIBUTIONS) if name in counted]
        # only the sets whose truths are kept are drawn (device time and memory)
        sets, set_count = jobs.input_sets(module, device, seed,
                                           needed=lambda count: replay.kept_sets(count, expected))
        timed = []
        for index in range(len(sets)):
            truths = jobs.truth(truth_model, reference, sets[index])
            timed.append({"index": index, "ref_err": _ref_err(rule, reference, sets[index], truths, atol, rtol),
                          "truths": _store(writer, f"set/{index}", truths, expected, secret)})
            del truths
        # the candidate must send a swapped call (replay.IdentitySwap) where the kept sets allow one
        swappable = len(sets) > 1 and replay.same_form(sets[0], sets[1])
        phases = {"truths_wait_s": granted - asked, "truths_s": time.monotonic() - granted}
        if job.get("paired"):  # within the candidate's device time, not the truths'
            _eager_blocks(channel, reference, sets)
    except problems.ProblemError as exc:
        return {"status": "invalid", "reason": str(exc)}
    except Exception as exc:
        return jobs.failed_problem(exc, "the reference failed to run")
    return {"status": "ok", "reason": "", "atol": atol, "rtol": rtol, "expected": expected,
            "distributions": distributions, "sets": timed, "set_count": set_count, "swappable": swappable,
            "phases": phases}


def _eager_blocks(channel, reference, sets: list) -> None:
    """On the CPU, once the truths are made: the eager baseline timed in the blocks the parent asks
    for, between the candidate's blocks of timed calls (runner/host/pairing.py), until it asks for none.
    On the candidate's timed input sets, those drawn here: all of them but where large outputs keep
    fewer truths, and a problem that large is not timed from cache anyway."""
    done = 0
    with torch.no_grad():
        timing.warm(reference, sets)
        channel.send("pair", at="ready")
        while isinstance(size := channel.receive().get("block"), int) and size > 0:
            channel.send("pair", samples=timing.block(reference, sets, done, size))
            done += size


def _ref_err(rule, reference, inputs, truths, atol, rtol):
    """PyTorch's own fp32 error, whose double the judge allows; none under KernelBench's rule, whose
    truth is that fp32 result itself (allclose alone decides)."""
    if rules.kernelbench(rule):
        return 0.0
    return _finite(jobs.reference_err(reference, inputs, truths, atol, rtol))


def _distribution(module, name, index, seed, device, reference, truth_model, writer, atol, rtol, expected,
                  secret, count, rule) -> dict:
    """One distribution's trials, as runner/inside/jobs.py draws them: stopped (skipped) at the first
    trial without floating inputs or with a non-finite truth, as the in-process judge did."""
    row = {"name": name, "skipped": False, "trials": []}
    for trial, inputs, truths, skip in trials(module, name, index, seed, device, reference, truth_model,
                                              count):
        if skip:
            row.update(skipped=True, skip_reason=skip)
            break
        row["trials"].append({"ref_err": _ref_err(rule, reference, inputs, truths, atol, rtol),
                              "truths": _store(writer, f"trial/{name}/{trial}", truths, expected, secret)})
        del truths, inputs
    return row


def trials(module, name, index, seed, device, reference, truth_model, count):
    """Yields (trial, inputs, truths, None) for a distribution's first `count` trials, as the judge
    draws them, or a last (trial, None, None, why) where it stops: a stress distribution without
    floating inputs or with a non-finite truth is skipped."""
    for trial in range(count):
        inputs = problems.make_inputs(module, name, seed + 1000 * index + trial, device)
        if name != "get_inputs" and not problems.has_floating_input(inputs):
            yield trial, None, None, "no floating inputs"
            return
        truths = jobs.truth(truth_model, reference, inputs)
        if name != "get_inputs" and not all(bool(torch.isfinite(t).all()) for t in truths):
            yield trial, None, None, "the truth is not finite on these inputs"
            return
        yield trial, inputs, truths, None


def _store(writer: Writer, key: str, truths: list, expected: list, secret: bytes) -> list[dict]:
    """Float64 truths are kept in float32 unless the output itself is float64: rounding to float32
    moves err by at most ~6e-8 relative against tolerances of 1e-4 and looser, and halves the memory.
    A large truth is kept as its sample (sampling.py), at the positions the candidate's will be."""
    entries = []
    for k, truth in enumerate(truths):
        if sampling.sampled(truth.shape):
            truth = sampling.take(truth, sampling.seed_for(secret, f"{key}/{k}"))
        if truth.is_floating_point() and "float64" not in expected[min(k, len(expected) - 1)]["dtype"]:
            truth = truth.to(torch.float32)
        entries.append(writer.put(f"{key}/{k}", truth))
    return entries


def _finite(value: float):
    return None if value == float("inf") else float(value)
