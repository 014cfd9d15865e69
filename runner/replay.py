"""Results replayed late: correctness of the timed calls themselves, sampled over the whole loop.

A kernel can compute honestly for its first calls (those checked for correctness, and the warm-up)
and return a stored or stale output later; checking a fixed pair of timed calls misses it when it
turns after them. Runs inside the sandbox; runner/judge.py's timed loop hands each output here.
"""

from __future__ import annotations

import ctypes
import random

from .verify import compare, passes, plain_tensor

__all__ = ["LateReplay", "TruthCheck", "materialised"]


def materialised(result):
    """forward's result checked plain and dense inside the timed window (runner/judge.py's timed call)."""
    for i, out in enumerate(result if isinstance(result, (tuple, list)) else [result]):
        plain_tensor(out, f"output {i} of a timed call")
    return result


class LateReplay:
    """Correctness of timed calls, spread over the whole loop: one call at random in every block
    of `block` calls, and the last call. Each output is cloned right after its own call (a kernel
    that writes one static buffer every call, as CUDA graphs do, stays correct) and compared with
    the truth of that call's inputs, so a kernel honest for its first calls and stale or wrong later
    is caught wherever it turns. The picks come from the OS's randomness, nothing the candidate can
    read in this process."""

    # Blocks after whose sampled call one untimed, recorded call runs (aten ops, launches): spread
    # over loops of any length, at most four extra calls.
    UNTIMED_BLOCKS = (1, 4, 16, 48)

    def __init__(self, check, block: int = 8, device: str = "cpu", untimed=None):
        self.check = check  # (inputs, outputs) -> err, or None when the outputs pass
        self.block = block
        self.untimed = untimed  # (inputs) -> None: one recorded call outside the clock; raises to refuse
        self.untimed_calls = 0
        self.between_calls = persisting_l2_reset(device)
        self.between_calls()
        self.pick = -1
        self.random = random.SystemRandom()
        self.last = None
        self.checked: list[int] = []
        self.failure: tuple[int, float] | None = None

    def see(self, i: int, inputs, out) -> None:
        outs = [o.detach().clone() for o in (out if isinstance(out, (tuple, list)) else [out])]
        if i % self.block == 0:
            self.pick = i + self.random.randrange(self.block)
        if i == self.pick:
            self._check(i, inputs, outs)
            self.last = None
            if self.untimed is not None and i // self.block in self.UNTIMED_BLOCKS:
                self.untimed_calls += 1
                self.untimed(inputs)
        else:
            self.last = (i, inputs, outs)
        self.between_calls()

    def _check(self, i: int, inputs, outs) -> None:
        self.checked.append(i)
        if self.failure is None:
            err = self.check(inputs, outs)
            if err is not None:
                self.failure = (i, err)

    def finish(self) -> tuple[int, float] | None:
        """(call, err) of the first wrong call checked, after checking the last one; None if all passed."""
        if self.last is not None:
            self._check(*self.last)
            self.last = None
        return self.failure


class TruthCheck:
    """LateReplay's check: err of a timed call's outputs against the truth of its inputs, or None
    when they pass. The timed loop cycles over a few input sets, so each set's truth and PyTorch's
    fp32 error are computed once and kept (up to `keep_bytes`)."""

    def __init__(self, truth, reference_err, atol: float, rtol: float, keep_bytes: int = 2 * 1024**3):
        self.truth, self.reference_err, self.atol, self.rtol = truth, reference_err, atol, rtol
        self.keep_bytes, self.kept_bytes = keep_bytes, 0
        self.known: dict[int, tuple[list, float, object]] = {}

    def __call__(self, inputs, outs) -> float | None:
        known = self.known.get(id(inputs))
        if known is None or known[2] is not inputs:
            truths = self.truth(inputs)
            known = (truths, self.reference_err(inputs, truths), inputs)
            size = sum(t.numel() * t.element_size() for t in truths)
            if self.kept_bytes + size <= self.keep_bytes:
                self.known[id(inputs)], self.kept_bytes = known, self.kept_bytes + size
        truths, ref_err, _ = known
        err, _ = compare(outs, truths, self.atol, self.rtol)
        return None if passes(err, ref_err) else err


CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def persisting_l2_reset(device: str):
    """Between timed calls on CUDA: no L2 carve-out for persisting accesses and no persisting lines
    left, so a kernel that set a persisting access-policy window (hitProp persisting) cannot keep its
    data in L2 through the flush before the next call. A no-op elsewhere, or without the driver."""
    if device != "cuda":
        return lambda: None
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        set_limit, reset = driver.cuCtxSetLimit, driver.cuCtxResetPersistingL2Cache
    except (OSError, AttributeError):
        return lambda: None
    set_limit.argtypes = [ctypes.c_int, ctypes.c_size_t]

    def run() -> None:
        set_limit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)
        reset()

    return run
