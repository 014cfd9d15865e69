"""Results replayed late (runner/inside/replay.py): timed calls are checked at random over the whole loop,
the last one included, each output cloned right after its own call. A kernel honest for its first
calls and stale later is `incorrect`; one that writes the same static buffer every call is correct."""

import pytest
import torch

from runner.common import timing, verify
from runner.inside import replay

from . import sources


def check_against(truth):
    """A check (as the trusted judge's) whose truth is `truth(inputs)` and whose fp32 reference is exact."""
    def check(i, inputs, outs):
        err, _ = verify.compare(outs, [truth(inputs)], 1e-6, 1e-6)
        return None if verify.passes(err, 0.0) else err
    return check


def run_loop(n, outputs_for, block=8):
    # A distinct input set per call, so a stale answer is wrong on every later call.
    sets = [[torch.full((4,), float(k))] for k in range(n)]
    late = replay.LateReplay(check_against(lambda x: x[0] * 2), block=block)
    for i in range(n):
        inputs = sets[i]
        late.see(i, inputs, outputs_for(i, inputs))
    return late, late.finish()


def test_every_block_and_the_last_call_are_checked():
    late, wrong = run_loop(50, lambda i, x: x[0] * 2)
    assert wrong is None
    assert late.checked[-1] == 49
    blocks = {i // 8 for i in late.checked}
    assert blocks == set(range(7)), late.checked


def test_honest_then_stale_is_caught_wherever_it_turns():
    for turn in (3, 20, 41, 49):
        stale = {}

        def outputs(i, x):
            if i < turn:
                stale["out"] = x[0] * 2
                return x[0] * 2
            return stale["out"].clone()  # the answer for an earlier call's inputs

        _, wrong = run_loop(50, outputs)
        assert wrong is not None and wrong[0] >= turn, (turn, wrong)


def test_a_static_output_buffer_written_every_call_stays_correct():
    buffer = torch.empty(4)

    def outputs(i, x):
        buffer.copy_(x[0] * 2)
        return buffer  # the same tensor every call, as a CUDA-graph kernel returns

    _, wrong = run_loop(50, outputs)
    assert wrong is None


def test_only_calls_with_kept_truths_are_checked_within_the_limit():
    """Large outputs: truths are kept for some input sets only, and a few calls are shipped to the judge."""
    seen = []
    late = replay.LateReplay(lambda i, x, o: seen.append(i), eligible=lambda i: i % 4 == 0, limit=3)
    for i in range(100):
        late.see(i, [torch.ones(2)], torch.ones(2))
    late.finish()
    assert len(seen) == 3 and all(i % 4 == 0 for i in seen)
    assert seen[-1] == 96  # the last call whose inputs have a truth


def test_a_loop_of_known_length_copies_only_the_calls_it_checks():
    """A paired CPU loop says its length first: the copy for the end's check is made of its last
    eligible call alone, and a kernel that turns stale there is still caught."""
    for turn in (None, 97):
        seen, copied = [], []  # the checked calls and their values; the calls copied for the end
        late = replay.LateReplay(lambda i, x, o: seen.append((i, o[0][0].item())), eligible=lambda i: i % 4 < 3,
                                 limit=3)
        late.plan(100)
        assert late.last_call == 98  # 99 has no truth kept
        for i in range(100):
            out = torch.full((2,), float(i if turn is None or i < turn else 0))
            late.see(i, [torch.ones(2)], out)
            if late.last is not None and late.last[0] == i:
                copied.append(i)
        late.finish()
        assert copied == [98] and seen[-1][0] == 98
        assert seen[-1][1] == (98.0 if turn is None else 0.0)  # what call 98 returned, for the judge


def test_kept_sets_follow_the_output_size():
    small = [{"shape": [128, 2048], "dtype": "float32"}]
    huge = [{"shape": [4096, 65536], "dtype": "float32"}]
    assert replay.kept_sets(8, small) == 8
    assert replay.kept_sets(4, huge) == 1


class Lazy(torch.Tensor):
    pass


def test_a_tensor_subclass_output_is_refused_in_the_timed_call():
    lazy = torch.zeros(4).as_subclass(Lazy)
    with pytest.raises(verify.Rejected, match="not a plain torch.Tensor"):
        replay.materialised(lazy)
    with pytest.raises(verify.Rejected, match="output 1 of a timed call"):
        replay.materialised((torch.zeros(4), lazy))
    with pytest.raises(verify.Rejected, match="layout"):
        replay.materialised(torch.zeros(4, 4).to_sparse())
    plain = torch.zeros(4)
    assert replay.materialised(plain) is plain


# --- end to end on the CPU ------------------------------------------------------------------------

# Small, so each call takes microseconds and the timed loop runs its full 500 calls.
SMALL_SILU = sources.SILU_PROBLEM.replace("torch.randn(128, 2048)", "torch.randn(64, 64)")

# Honest for its first TURN calls (correctness, warm-up and the first ~60 timed calls), then
# it returns a stored copy of an earlier output. The state lives in C, out of the static checks' view.
LATE_CHEAT = sources._C_PRELUDE + '''
LIB = build(r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static long calls;
static float *saved;
void silu(const float *x, float *y, int64_t n) {
    if (++calls > TURN && saved) { memcpy(y, saved, n * sizeof(float)); return; }
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + __builtin_expf(-x[i]));
    if (calls == TURN) { saved = malloc(n * sizeof(float)); memcpy(saved, y, n * sizeof(float)); }
}
""")
LIB.silu.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, x):
        x = x.contiguous()
        OUTPUT
        LIB.silu(x.data_ptr(), out.data_ptr(), x.numel())
        return out
'''


@pytest.mark.slow
def test_kernel_honest_for_its_first_calls_then_stale_is_incorrect(cpu_pool):
    source = LATE_CHEAT.replace("TURN", "120").replace("OUTPUT", "out = torch.empty_like(x)")
    result = cpu_pool.evaluate(SMALL_SILU, source, seed=5)
    assert result["status"] == "incorrect", result["reason"]
    assert "timed call" in result["reason"] and "replayed" in result["reason"]


@pytest.mark.slow
def test_static_output_buffer_is_correct(cpu_pool):
    """The honest look-alike: no stale answers (TURN is never reached), one buffer returned every call."""
    source = LATE_CHEAT.replace("TURN", "1000000000").replace(
        "OUTPUT", "if self.out is None:\n            self.out = torch.empty_like(x)\n        out = self.out")
    result = cpu_pool.evaluate(SMALL_SILU, source, seed=5)
    assert result["status"] == "correct", result["reason"]
    assert result["timing"]["n"] >= timing.SETTLE_REPS


def test_untimed_recorded_calls_are_spread_through_the_loop():
    seen = []
    late = replay.LateReplay(check_against(lambda x: x[0] * 2))
    late.untimed = lambda i, inputs: seen.append(int(inputs[0][0]))  # the call whose inputs it got
    for i in range(500):
        x = [torch.full((4,), float(i))]
        late.see(i, x, x[0] * 2)
    assert [i // 8 for i in seen] == list(replay.LateReplay.UNTIMED_BLOCKS)
    assert late.untimed_calls == 4


# PyTorch does the work on calls 70-300 only (hidden in a lambda from the static checks): right
# results, so only an untimed recorded call inside the loop can see it; the last calls are honest.
MIDDLE_CHEAT = sources._C_PRELUDE + '''
LIB = build(r"""
#include <stdint.h>
void silu(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + __builtin_expf(-x[i]));
}
""")
LIB.silu.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
TORCH_SILU = lambda t: t * t.sigmoid()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        x = x.contiguous()
        out = torch.empty_like(x)
        LIB.silu(x.data_ptr(), out.data_ptr(), x.numel())
        if 70 <= self.calls < 300:
            out = TORCH_SILU(x)
        return out
'''


@pytest.mark.slow
def test_pytorch_in_the_middle_of_the_timed_loop_is_seen(cpu_pool):
    result = cpu_pool.evaluate(SMALL_SILU, MIDDLE_CHEAT, seed=6)
    assert result["status"] == "rejected", result["reason"]
    assert "untimed call" in result["reason"] and "uses PyTorch for" in result["reason"], result["reason"]
