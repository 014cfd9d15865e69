"""Degenerate problems: those where a trivial output passes the problem's own judging, so a kernel
that does no work is judged correct (KernelBench level 2's 80 and 83 are all zeros for every input).

Checked at validation, inside the problem's sandbox, on the inputs a candidate is judged on (each
distribution's first trials, drawn by runner/inside/truths.py) and with the judge's own rule (verify.passes against
the float64 truth, PyTorch's fp32 error allowed for). Trivial outputs tried, in order: all zeros,
one constant per output (the first truth's mean), and the first input's truth reused for every
other input (the output does not depend on the input). A large output is compared at the judge's
number of sampled positions (the same ones on every trial), so the check holds a few float64 copies
of 16 MiB, not of the output: on a 6 GB output it had filled the device. Runs only inside a sandbox process.
"""

from __future__ import annotations

import torch

from ..common import sampling, verify
from . import problem as problems
from . import truths as judged

TRIALS_PER_DISTRIBUTION = 2  # enough to see an output that ignores its input; each costs a float64 forward
MIN_TRIALS = 2


def reason(module, reference, truth_model, seed: int, device: str, atol: float, rtol: float) -> str | None:
    """Why any kernel writing a trivial output would be judged correct on this problem, or None."""
    zeros = constant = same = True
    first = means = None
    drawn = 0
    for index, name in enumerate(problems.DISTRIBUTIONS):
        count = min(TRIALS_PER_DISTRIBUTION, problems.TRIALS[name])
        for _, inputs, truths, skip in judged.trials(module, name, index, seed, device, reference, truth_model, count):
            if skip:
                break  # skipped by the judge too
            with torch.no_grad():
                ours = _sample(problems.as_outputs(reference(*verify.copies(inputs))))
            truths = _sample(truths)
            ref_err = verify.compare(ours, truths, atol, rtol)[0]
            del ours
            if first is None:
                first = [t.clone() for t in truths]
                means = [float(t.double().mean()) if t.numel() else 0.0 for t in truths]

            def passes(outputs, truths=truths) -> bool:
                return verify.passes(verify.compare(outputs, truths, atol, rtol)[0], ref_err)

            zeros = zeros and passes([torch.zeros_like(t) for t in truths])
            constant = constant and passes([torch.full_like(t, m) for t, m in zip(truths, means)])
            same = same and all(a.shape == t.shape for a, t in zip(first, truths)) and passes(first)
            drawn += 1
            del truths, inputs
            if not (zeros or constant or same):
                return None
    if drawn < MIN_TRIALS:
        return None
    if zeros:
        return "its output is all zeros (within its tolerance) for every input: any kernel that writes zeros is correct"
    if constant:
        shown = ", ".join(f"{m:.4g}" for m in means[:4]) + (", …" if len(means) > 4 else "")
        return (f"its output is constant ({shown}) for every input: any kernel that writes that constant is "
                "correct")
    return ("its output does not depend on the input: one input's result passes for every other, so a kernel "
            "that returns a stored result is correct")


def _sample(tensors: list) -> list:
    """Large outputs at fixed sampled positions (one seed per output index, so every trial's sample
    lines up with the first's); small ones whole."""
    return [sampling.take(t, sampling.seed_for(b"degenerate", str(k))) if sampling.sampled(t.shape) else t
            for k, t in enumerate(tensors)]
