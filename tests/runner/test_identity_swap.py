"""Caches keyed on the inputs' identity, caught at run time (runner/inside/replay.py's IdentitySwap): the timed
loop cycles a fixed list of input sets, so such a cache returns right answers to every replay check;
given the same storages holding another set's data, it returns what it stored for them. The static
checks leave identity to this check (tests/runner/test_checks.py): here the cheats are judged with the
static caching rule switched off, and their honest look-alikes (static buffers as CUDA graphs keep
them, a plan keyed on an input's address) stay correct."""

import pytest
import torch

from runner.host import checks
from runner.inside import replay

from . import sources
from .corpus import read

SMALL_SILU = sources.SILU_PROBLEM.replace("torch.randn(128, 2048)", "torch.randn(64, 64)")

SILU_LIB = sources._C_PRELUDE + '''
LIB = build(r"""
#include <math.h>
#include <stdint.h>
void silu(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
}
""")
LIB.silu.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        STATE

    def forward(self, x):
FORWARD
'''


def silu_kernel(state: str, forward: str) -> str:
    body = "\n".join("        " + line for line in forward.strip().splitlines())
    return SILU_LIB.replace("STATE", state).replace("FORWARD", body)


ID_CACHE = silu_kernel("self.memo = {}", """
hit = self.memo.get(id(x))
if hit is not None:
    return hit
y = torch.empty_like(x)
LIB.silu(x.data_ptr(), y.data_ptr(), x.numel())
self.memo[id(x)] = y
return y
""")
IS_CACHE = silu_kernel("self.seen = []", """
for held, out in self.seen:
    if held is x:
        return out
y = torch.empty_like(x)
LIB.silu(x.data_ptr(), y.data_ptr(), x.numel())
self.seen.append((x, y))
return y
""")
LAST_CALL_CACHE = silu_kernel("self.last = None", """
# one entry: the previous call's input object and output (the pattern of a published conv kernel that
# kept its input's channels_last copy while x.data_ptr() stayed the same)
if self.last is not None and self.last[0] is x:
    return self.last[1]
y = torch.empty_like(x)
LIB.silu(x.data_ptr(), y.data_ptr(), x.numel())
self.last = (x, y)
return y
""")
STATIC_BUFFERS = silu_kernel("self.static_in = None", """
if self.static_in is None or self.static_in.shape != x.shape:
    self.static_in = torch.zeros_like(x)
    self.static_out = torch.empty_like(x)
self.static_in.copy_(x)
LIB.silu(self.static_in.data_ptr(), self.static_out.data_ptr(), x.numel())
return self.static_out
""")
ADDRESS_PLAN = silu_kernel("self.ptr, self.n = None, 0", """
if x.data_ptr() != self.ptr:  # re-plan for a new address (a graph captured on the input's own storage)
    self.ptr, self.n = x.data_ptr(), x.numel()
y = torch.empty_like(x)
LIB.silu(self.ptr, y.data_ptr(), self.n)
return y
""")


@pytest.fixture
def no_static_caching_rule(monkeypatch):
    monkeypatch.setattr(checks.CallState, "caching", lambda self, node: None)


@pytest.mark.slow
@pytest.mark.parametrize("name, problem, source, by_swap", [
    # Freed copies' addresses come back (the allocator reuses them), so an address-keyed cache is often
    # wrong already on the correctness trials; an object held (`is`) never comes back: only the swap sees it.
    ("data_ptr-keyed dict (corpus)", "softmax", read("cpu/cache_on_self.py"), False),
    ("id()-keyed dict", SMALL_SILU, ID_CACHE, False),
    ("inputs held and matched with `is`", SMALL_SILU, IS_CACHE, True),
    ("the last call's input matched with `is`", SMALL_SILU, LAST_CALL_CACHE, True),
])
def test_identity_caches_are_caught_with_the_static_rule_off(cpu_pool, no_static_caching_rule, name, problem,
                                                              source, by_swap):
    if problem == "softmax":
        problem = read("problems/softmax.py")
    assert checks.check_source(source, reference_source=problem) == [], name
    # With library calls allowed a cache hit (no launch of its own) breaks no other rule.
    result = cpu_pool.evaluate(problem, source, seed=3, allow_library=True)
    assert result["status"] == "incorrect", (name, result["status"], result["reason"])
    if by_swap:
        assert "not from their identity" in result["reason"] and "storages of input set" in result["reason"], name
    # Without them, the swapped call's hit also launched no kernel of its own: refused for that first.
    result = cpu_pool.evaluate(problem, source, seed=3)
    assert result["status"] in ("incorrect", "rejected"), (name, result["status"], result["reason"])


@pytest.mark.slow
def test_an_address_keyed_cache_in_c_is_caught_at_run_time(cpu_pool):
    """The static checks cannot see a table kept in C (tests/runner/corpus: cpu/cache_by_address_in_c)."""
    source = read("cpu/cache_by_address_in_c.py")
    assert checks.check_source(source, reference_source=read("problems/softmax.py"), allow_library=True) == []
    for seed in (4, 5, 6):
        result = cpu_pool.evaluate(read("problems/softmax.py"), source, seed=seed, allow_library=True)
        assert result["status"] == "incorrect", result["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("source", [STATIC_BUFFERS, ADDRESS_PLAN], ids=["static buffers", "plan keyed on address"])
def test_honest_look_alikes_are_correct(cpu_pool, source):
    assert checks.check_source(source, reference_source=SMALL_SILU) == []
    for allow_library in (False, True):
        result = cpu_pool.evaluate(SMALL_SILU, source, seed=5, allow_library=allow_library)
        assert result["status"] == "correct", result["reason"]


# --- the swap itself ------------------------------------------------------------------------------

def swap_for(sets, kept=None):
    calls, shipped = [], []
    swap = replay.IdentitySwap(sets, len(sets) if kept is None else kept,
                               lambda inputs, given: calls.append((inputs, [g.clone() for g in given])) or [given[0] * 2],
                               lambda data, into, outs: shipped.append((data, into, outs[0])))
    swap.LIMIT = 1000
    return swap, calls, shipped


def test_swaps_stop_at_their_limit():
    sets = [[torch.full((4,), float(k))] for k in range(3)]
    swap = replay.IdentitySwap(sets, 3, lambda inputs, given: [given[0] * 2], lambda *a: None)
    for _ in range(20):
        swap(seen=3)
    assert swap.done == replay.IdentitySwap.LIMIT


def test_a_swap_writes_another_sets_data_into_seen_storages_and_restores_them():
    sets = [[torch.full((4,), float(k))] for k in range(4)]
    storages = [s[0].data_ptr() for s in sets]
    swap, calls, shipped = swap_for(sets)
    for _ in range(400):  # random pairs: every set's storages taken at least once
        swap(seen=4)
    for data, into, out in shipped:
        assert data != into
        assert torch.equal(out, torch.full((4,), 2.0 * data))  # the call saw set `data`'s values
    assert {into for _, into, _ in shipped} == {0, 1, 2, 3}
    assert [s[0].data_ptr() for s in sets] == storages  # the same storages...
    assert all(torch.equal(s[0], torch.full((4,), float(k))) for k, s in enumerate(sets))  # ...their data back


def test_a_swap_targets_only_storages_the_loop_passed_and_data_with_a_kept_truth():
    sets = [[torch.full((4,), float(k))] for k in range(6)]
    swap, _, shipped = swap_for(sets, kept=2)
    for _ in range(40):
        swap(seen=3)
    assert {data for data, _, _ in shipped} <= {0, 1}
    assert {into for _, into, _ in shipped} <= {0, 1, 2}
    swap, _, shipped = swap_for(sets[:1], kept=1)
    swap(seen=5)
    assert shipped == []  # one set: nothing to swap with


def test_every_other_swap_takes_the_storages_of_the_call_just_before():
    sets = [[torch.full((4,), float(k))] for k in range(8)]
    swap, _, shipped = swap_for(sets)
    for call in range(200):
        swap(seen=8, last=call % 8)
    intos = [into for _, into, _ in shipped]
    assert all(into == call % 8 for call, into in enumerate(intos) if call % 2 == 0)
    assert len({into for call, into in enumerate(intos) if call % 2 and into != call % 8}) > 4  # the rest spread
    swap, _, shipped = swap_for(sets[:2], kept=1)
    swap(seen=2, last=0)  # the last call's storages hold the only kept set: another pair is taken
    assert [(data, into) for data, into, _ in shipped] == [(0, 1)]


def test_sets_of_other_forms_are_not_swapped():
    sets = [[torch.zeros(4), 3], [torch.zeros(4), 5], [torch.zeros(5), 3]]
    swap, _, shipped = swap_for(sets)
    for _ in range(20):
        swap(seen=3)
    assert shipped == []


def test_a_failing_call_still_restores_the_storages():
    sets = [[torch.full((4,), float(k))] for k in range(2)]

    def boom(inputs, given):
        raise RuntimeError("the kernel crashed")

    swap = replay.IdentitySwap(sets, 2, boom, lambda *a: None)
    with pytest.raises(RuntimeError):
        swap(seen=2)
    assert torch.equal(sets[0][0], torch.zeros(4)) and torch.equal(sets[1][0], torch.ones(4))


# --- on the GPU: a published conv kernel's cache, with its own timing's choice made for it ----------------

# The published kernel keeps this copy only when its own start-up timing finds channels_last faster, so on a
# host where it does not, it is honest; here the choice is made, so the cache is always there.
CHANNELS_LAST_COPY = """import torch
import torch.nn as nn
import torch.nn.functional as F
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, padding=1)
        self.ptr, self.shape, self.copy = None, None, None
    def forward(self, x):
        if self.ptr != x.data_ptr() or self.shape != x.shape:
            self.copy = x.contiguous(memory_format=torch.channels_last)
            self.ptr, self.shape = x.data_ptr(), x.shape
        weight = self.conv.weight.contiguous(memory_format=torch.channels_last)
        return F.conv2d(self.copy, weight, self.conv.bias, padding=1)
"""


@pytest.mark.gpu
def test_a_channels_last_copy_keyed_on_the_inputs_address_is_caught_on_the_gpu(cuda_pool, no_static_caching_rule):
    assert checks.check_source(CHANNELS_LAST_COPY, reference_source=sources.CONV_PROBLEM, allow_library=True) == []
    for seed in (3, 4):
        result = cuda_pool.evaluate(sources.CONV_PROBLEM, CHANNELS_LAST_COPY, seed=seed, allow_library=True)
        assert result["status"] == "incorrect", (seed, result["status"], result["reason"])
    honest = CHANNELS_LAST_COPY.replace("self.ptr != x.data_ptr() or self.shape != x.shape", "True")
    result = cuda_pool.evaluate(sources.CONV_PROBLEM, honest, seed=3, allow_library=True)
    assert result["status"] == "correct", result["reason"]
