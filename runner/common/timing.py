"""Timing of one callable, the same way for candidates and baselines.

CUDA: device events around each call, the L2 cache flushed before each call (as
triton.testing.do_bench does), then a short device-side wait, so that the call is already
queued when its start event is reached: without it the host's launch latency (tens of µs,
and different from one process to the next) falls inside the timed window whenever it is
longer than the flush. A device-wide synchronize before the clock stops, and a wall clock
around the same span to catch work the events miss (side streams, threads).
CPU: the monotonic clock around each call, with the thread count fixed by the sandbox.

Each timed call gets the next of several distinct input sets, so a kernel that caches its
result between calls is timed (and re-checked) on inputs it has not seen.

A measurement ends at its time budget, or earlier once it has settled: at least SETTLE_REPS
calls over SETTLE_S (do_bench's default measuring time) and a median whose 95% CI is within
SETTLE_CI of it. A steady kernel then gives back most of the budget, and the device with it;
a noisy one keeps measuring to the budget.
"""

from __future__ import annotations

import math
import statistics
import time

# Enough repetitions for a stable median, within a time budget per measurement.
MIN_REPS = 10
MAX_REPS = 500
# A paired measurement's cap: blocks of up to 125 calls, so the first calls after each switch between the
# candidate's process and the eager baseline's (cold caches, both sides) weigh little in a block's median
# even for calls of tens of µs (docs/BENCHMARKS.md).
PAIRED_MAX_REPS = 2000
WARMUP_S = 0.05
SETTLE_REPS, SETTLE_S, SETTLE_CI, SETTLE_EVERY = 100, 0.1, 0.005, 25
PAIRED_BLOCKS = 16  # a CPU candidate's timed calls, in blocks between the eager baseline's (runner/host/pairing.py)
L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than the H200's 60 MB of L2; do_bench uses the same
LAUNCH_COVER_CYCLES = 400_000  # ~0.2 ms at 2 GHz: longer than a forward's host-side launch

_perf_counter = time.perf_counter  # captured before any candidate is imported


def summarize(samples_ms: list[float]) -> dict:
    """Median, spread, 95% CI of the median (order statistics) and Tukey outliers."""
    n = len(samples_ms)
    if n == 0:
        raise ValueError("no timing samples")
    ordered = sorted(samples_ms)
    median = statistics.median(ordered)
    lo, hi = median_ci95(ordered)
    q1, q3 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
    fence = 1.5 * (q3 - q1)
    outliers = sum(1 for s in ordered if s < q1 - fence or s > q3 + fence)
    return {
        "median_ms": median,
        "mean_ms": statistics.fmean(ordered),
        "std_ms": statistics.stdev(ordered) if n > 1 else 0.0,
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
        "n": n,
        "ci95_ms": [lo, hi],
        "outliers": outliers,
        "samples_ms": list(samples_ms),
    }


def median_ci95(ordered: list[float]) -> tuple[float, float]:
    """Distribution-free 95% confidence interval of the median: the order statistics at
    ranks n/2 -+ 1.96*sqrt(n)/2 (normal approximation of the binomial)."""
    n = len(ordered)
    if n < 3:
        return ordered[0], ordered[-1]
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)))
    hi = min(n - 1, int(math.ceil(n / 2 + half)) - 1)
    return ordered[lo], ordered[hi]


def _quantile(ordered: list[float], q: float) -> float:
    pos = (len(ordered) - 1) * q
    below = int(math.floor(pos))
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (pos - below)


def repetitions(estimate_ms: float, budget_s: float, cap: int = MAX_REPS) -> int:
    if estimate_ms <= 0:
        return cap
    return max(MIN_REPS, min(cap, int(budget_s * 1000 / estimate_ms)))


def settled(samples_ms: list[float], elapsed_s: float) -> bool:
    """Whether a measurement may stop before its budget (the module's docstring)."""
    n = len(samples_ms)
    if n < SETTLE_REPS or elapsed_s < SETTLE_S or n % SETTLE_EVERY:
        return False
    ordered = sorted(samples_ms)
    lo, hi = median_ci95(ordered)
    median = statistics.median(ordered)
    return median > 0 and (hi - lo) / 2 <= SETTLE_CI * median


def time_cpu(fn, input_sets: list, *, budget_s: float = 0.6, on_output=None, pair=None, on_plan=None) -> dict:
    """Wall-clock samples of fn(*inputs) on the CPU. `on_output(i, inputs, output)` sees
    every timed call's output (for sampled re-checks); it runs outside the clock. With
    `pair(calls, size)`, the calls come in at least PAIRED_BLOCKS equal blocks, `pair` called
    before each (it runs the eager baseline's block meanwhile, runner/host/pairing.py; False stops
    it) and once after the last with size None; such a measurement runs its whole budget, and
    `on_plan(calls)` hears beforehand how many calls it times."""
    warm(fn, input_sets)
    start = _perf_counter()
    fn(*input_sets[0])
    estimate = (_perf_counter() - start) * 1000
    reps = repetitions(estimate, budget_s, PAIRED_MAX_REPS if pair is not None else MAX_REPS)
    size = max(1, reps // PAIRED_BLOCKS) if pair is not None else 0
    reps = size * (reps // size) if size else reps
    if size and on_plan is not None:
        on_plan(reps)
    samples, began = [], _perf_counter()
    for i in range(reps):
        if size and i % size == 0 and not pair(i, size):
            size = 0
        inputs = input_sets[i % len(input_sets)]
        t0 = _perf_counter()
        out = fn(*inputs)
        samples.append((_perf_counter() - t0) * 1000)
        if on_output is not None:
            on_output(i, inputs, out)
        del out
        if pair is None and settled(samples, _perf_counter() - began):
            break
    if size:
        pair(len(samples), None)
    return {"samples_ms": samples, "wall_ms": samples}


def block(fn, input_sets: list, first: int, count: int) -> list[float]:
    """`count` wall-clock samples of fn on the CPU, from input set `first` on (the eager side of a pairing)."""
    samples = []
    for i in range(first, first + count):
        inputs = input_sets[i % len(input_sets)]
        t0 = _perf_counter()
        fn(*inputs)
        samples.append((_perf_counter() - t0) * 1000)
    return samples


def time_cuda(fn, input_sets: list, *, budget_s: float = 0.5, on_output=None) -> dict:
    """Device-event samples of fn(*inputs), L2 flushed before each call, plus the wall
    clock of the same span (flush included on both sides) for the cross-check."""
    import torch

    sync = torch.cuda.synchronize
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    warm(fn, input_sets, sync)
    stream = torch.cuda.current_stream()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
    sync()
    ev[1].record(stream)
    fn(*input_sets[0])
    ev[2].record(stream)
    sync()
    estimate = ev[1].elapsed_time(ev[2])
    samples, spans, walls, began = [], [], [], _perf_counter()
    for i in range(repetitions(estimate, budget_s)):
        inputs = input_sets[i % len(input_sets)]
        sync()
        t0 = _perf_counter()
        ev[0].record(stream)
        flush.zero_()
        torch.cuda._sleep(LAUNCH_COVER_CYCLES)
        ev[1].record(stream)
        out = fn(*inputs)
        ev[2].record(stream)
        sync()  # device-wide: side streams finish before the clock stops
        walls.append((_perf_counter() - t0) * 1000)
        samples.append(ev[1].elapsed_time(ev[2]))
        spans.append(ev[0].elapsed_time(ev[2]))
        if on_output is not None:
            on_output(i, inputs, out)
        del out
        if settled(samples, _perf_counter() - began):
            break
    del flush
    return {"samples_ms": samples, "span_ms": spans, "wall_ms": walls}


def unseen_work(measured: dict) -> str:
    """A reason when the wall clock saw much more time than the device events did: work
    on another stream or thread that the timed stream does not wait for. '' otherwise."""
    if "span_ms" not in measured:
        return ""
    span = statistics.median(measured["span_ms"])
    wall = statistics.median(measured["wall_ms"])
    # Host-side overhead around the span (event record, synchronize) is tens of µs.
    if wall - span > max(0.3 * span, 0.15):
        return (f"the wall clock measured {wall:.3f} ms per call but the timed stream only "
                f"{span:.3f} ms: work ran outside the timed stream (another stream or thread)")
    return ""


def run_batches(channel, fn, input_sets: list, device: str, median_ms: float) -> None:
    """The candidate's side of the batch clock (runner/host/batchclock.py): announce the median this
    process reports, then run each batch the parent commands, back to back, and say when it is
    done; the parent times the batch on its own clock. On CUDA each batch is queued behind a
    device-side wait of the parent's choosing, long enough for the host to launch every call,
    so host launch gaps do not count against a launch-bound kernel."""
    sync, sleep, cycles_per_ms, launch_ms = (lambda: None), None, 0.0, 0.0
    if device == "cuda":
        import torch

        sync, sleep = torch.cuda.synchronize, torch.cuda._sleep
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        sync()
        ev[0].record()
        sleep(1_000_000)
        ev[1].record()
        sync()
        cycles_per_ms = 1_000_000 / max(1e-6, ev[0].elapsed_time(ev[1]))
        t0 = _perf_counter()
        fn(*input_sets[0])
        launch_ms = (_perf_counter() - t0) * 1000
        sync()
    channel.send("batch", at="ready", median_ms=median_ms, launch_ms=launch_ms)
    while True:
        command = channel.receive()
        count = command.get("batch")
        if not isinstance(count, int) or count <= 0:
            return
        sync()
        if sleep is not None:
            sleep(int(min(1000.0, float(command.get("cover_ms") or 0.0)) * cycles_per_ms))
        for i in range(count):
            fn(*input_sets[i % len(input_sets)])
        sync()
        channel.send("batch", at="done", n=count)


def warm(fn, input_sets, sync=lambda: None) -> None:
    deadline = _perf_counter() + WARMUP_S
    for i in range(50):
        fn(*input_sets[i % len(input_sets)])
        sync()
        if i >= 2 and _perf_counter() > deadline:
            break
