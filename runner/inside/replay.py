"""Results replayed late: correctness of the timed calls themselves, sampled over the whole loop.

A kernel can compute honestly for its first calls (those checked for correctness, and the warm-up)
and return a stored or stale output later; checking a fixed pair of timed calls misses it when it
turns after them. Runs inside the sandbox; runner/inside/jobs.py's timed loop hands each output here, and
the sampled outputs go to the trusted judge (runner/judge/referee.py), which compares them with the truths
made in the problem's own sandbox (runner/inside/truths.py). The sampling runs in the candidate's process,
so it can only add evidence: it is one of the checks a determined candidate could evade
(docs/SECURITY.md).
"""

from __future__ import annotations

import ctypes
import math
import random

import torch

from ..common.sampling import shipped_shape
from ..common.verify import plain_tensor

__all__ = ["LateReplay", "IdentitySwap", "same_form", "materialised", "kept_sets", "output_bytes", "REPLAY_BYTES",
           "SHIPPED_BYTES"]

REPLAY_BYTES = 1024**3  # output bytes of the timed input sets whose truths are made (device time there)
UNTIMED_BLOCK = 8
SHIPPED_BYTES = 256 * 1024**2  # what the checked timed calls copy to the host, inside the timing loop


def kept_sets(count: int, expected: list[dict]) -> int:
    """How many of the `count` timed input sets have truths kept for the replay (at least one):
    the same answer in the problem's sandbox and in the candidate's, from the outputs' form."""
    return max(1, min(count, REPLAY_BYTES // max(1, output_bytes(expected))))


def output_bytes(expected: list[dict], *, shipped: bool = False) -> int:
    """Bytes of one call's outputs, or (`shipped`) of what crosses to the judge: a large output's sample."""
    shape = shipped_shape if shipped else (lambda s: s)
    return sum(math.prod(int(n) for n in shape(e["shape"])) * (8 if "float64" in str(e["dtype"]) else 4)
               for e in expected)


def materialised(result):
    """forward's result checked plain and dense inside the timed window (runner/inside/jobs.py's timed call)."""
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

    # Blocks of UNTIMED_BLOCK calls after whose sampled call one untimed, recorded call runs (aten
    # ops, launches): spread over loops of any length, at most four extra calls.
    UNTIMED_BLOCKS = (1, 4, 16, 48)

    def __init__(self, check, block: int = 8, device: str = "cpu", untimed=None, eligible=None, limit=None):
        self.check = check  # (call, inputs, outputs) -> err, or None when the outputs pass
        self.eligible = eligible or (lambda i: True)  # calls whose inputs have a truth kept
        self.limit = limit  # at most this many calls checked (host memory), the last one included
        self.block = block
        self.untimed = untimed  # (call, inputs) -> None: recorded calls outside the clock; raises to refuse
        self.untimed_calls = 0
        self.between_calls = persisting_l2_reset(device)
        self.between_calls()
        self.pick = self.check_pick = -1  # the untimed call's and the checked call's in this block
        self.random = random.SystemRandom()
        self.last = None
        self.last_call = None  # the loop's last eligible call, where its length is known beforehand
        self.checked: list[int] = []
        self.failure: tuple[int, float] | None = None

    def see(self, i: int, inputs, out) -> None:
        if i % UNTIMED_BLOCK == 0:
            self.pick = i + self.random.randrange(UNTIMED_BLOCK)
        if i % self.block == 0:
            eligible = [j for j in range(i, i + self.block) if self.eligible(j)]
            self.check_pick = self.random.choice(eligible) if eligible else -1
        room = self.limit is None or len(self.checked) < self.limit - 1  # one kept for the last call
        # only a call that may be checked is copied: a large output's copy costs device time
        if i == self.check_pick and room:
            self._check(i, inputs, _copies(out))
            self.last = None
        elif self.eligible(i) and self.last_call in (None, i):
            self.last = (i, inputs, _copies(out))
        if i == self.pick and self.untimed is not None and i // UNTIMED_BLOCK in self.UNTIMED_BLOCKS:
            self.untimed_calls += 1
            self.untimed(i, inputs)
        self.between_calls()

    def plan(self, calls: int) -> None:
        """The loop times `calls` calls: only the last eligible one is copied for the end's check
        (a copy after every call evicts the next call's data from the caches, the candidate's only),
        and the checked calls spread over all of them (at most `limit`)."""
        self.last_call = next((j for j in range(calls - 1, -1, -1) if self.eligible(j)), -1)
        if self.limit:
            self.block = max(self.block, -(-calls // self.limit))

    def _check(self, i: int, inputs, outs) -> None:
        self.checked.append(i)
        if self.failure is None:
            err = self.check(i, inputs, outs)
            if err is not None:
                self.failure = (i, err)

    def finish(self) -> tuple[int, float] | None:
        """(call, err) of the first wrong call checked, after checking the last one; None if all passed."""
        if self.last is not None:
            self._check(*self.last)
            self.last = None
        return self.failure


class IdentitySwap:
    """A call on input storages the timed loop has already passed, holding another kept set's data,
    checked by the trusted judge against that data's truth. The timed loop cycles a fixed list of input
    sets, so a cache keyed on the inputs' identity (id(), data_ptr(), `is`) returns right answers that
    the replay checks cannot tell from honest ones; given the same storages with new data, it returns
    what it stored for them. A kernel that reads its inputs (a CUDA graph replayed on a captured
    address included) stays correct. Every other swap takes the storages of the call just before it, so a
    cache of one entry (the last call's address or object) is caught too; the rest take any seen storages.
    The storages get their own data back afterwards."""

    LIMIT = 8  # swapped calls per evaluation (a re-measured loop sees its untimed calls again)

    def __init__(self, sets: list, kept: int, run, ship):
        self.sets, self.kept = sets, kept
        self.run = run  # (inputs, given) -> outputs: one recorded call on `given`, judged against `inputs`
        self.ship = ship  # (data set, storages' set, outputs) -> None
        self.random = random.SystemRandom()
        self.done = 0

    def __call__(self, seen: int, last: int | None = None) -> None:
        """One swapped call; `seen`: how many timed calls ran so far (sets 0..seen-1 were passed);
        `last`: the set the candidate's previous call was given."""
        if self.done >= self.LIMIT:
            return
        pairs = [(s, t) for s in range(self.kept) for t in range(min(seen, len(self.sets)))
                 if t != s and same_form(self.sets[s], self.sets[t])]
        if self.done % 2 == 0 and any(t == last for _, t in pairs):
            pairs = [(s, t) for s, t in pairs if t == last]
        if not pairs:
            return
        data, into = self.random.choice(pairs)
        storages = self.sets[into]
        saved = [v.clone() if isinstance(v, torch.Tensor) else v for v in storages]
        try:
            for dst, src in zip(storages, self.sets[data]):
                if isinstance(dst, torch.Tensor):
                    dst.copy_(src)
            outs = self.run(self.sets[data], storages)
            self.ship(data, into, outs)
            self.done += 1
        finally:
            for dst, src in zip(storages, saved):
                if isinstance(dst, torch.Tensor):
                    dst.copy_(src)


def same_form(a: list, b: list) -> bool:
    """Two input sets whose tensors can take each other's data and whose other values agree."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
                return False
        else:
            try:
                if not bool(x == y):
                    return False
            except Exception:  # values without a plain equality (arrays): not swapped
                return False
    return True


def _copies(out) -> list:
    return [o.detach().clone() for o in (out if isinstance(out, (tuple, list)) else [out])]


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
