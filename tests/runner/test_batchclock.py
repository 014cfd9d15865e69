"""The parent's batch clock (runner/batchclock.py), driven with the times a sandbox would give it:
honest medians pass, forged low ones are re-measured and then rejected on a quiet device, noisy
on a disturbed one; a sandbox that skips the batches or changes its median is rejected."""

from runner.batchclock import BatchClock, tolerance_ms


def drive(clock: BatchClock, median_ms: float, per_call_ms: float, overhead_ms: float = 0.3,
          launch_ms: float = 0.02) -> BatchClock:
    """Run the clock's commands against a sandbox whose calls take `per_call_ms` each."""
    now = 0.0
    reply = clock.on_message({"at": "ready", "median_ms": median_ms, "launch_ms": launch_ms}, now)
    while reply and reply["batch"]:
        now += (overhead_ms + clock.cover_ms + reply["batch"] * per_call_ms) / 1000
        reply = clock.on_message({"at": "done", "n": reply["batch"]}, now)
    return clock


def test_an_honest_median_passes_in_one_round():
    clock = drive(BatchClock("cuda"), median_ms=0.5, per_call_ms=0.48)
    assert clock.verdict(0.5, None) is None
    assert len(clock.walls[clock.sizes[0]]) == 1
    assert abs(clock.slope_ms() - 0.48) < 1e-6  # the fixed costs cancel, the device-side wait included


def test_a_forged_median_is_measured_again_then_rejected_on_a_quiet_device():
    clock = drive(BatchClock("cuda"), median_ms=0.05, per_call_ms=1.0)
    assert len(clock.walls[clock.sizes[0]]) == 3
    status, why = clock.verdict(0.05, None)
    assert status == "rejected" and "below what the parent's clock allows" in why


def test_a_forged_median_on_a_disturbed_device_is_noisy():
    clock = drive(BatchClock("cuda"), median_ms=0.05, per_call_ms=1.0)
    assert clock.verdict(0.05, "other processes used the GPU's SMs")[0] == "noisy"


def test_the_tolerance_is_ten_percent_or_twenty_microseconds():
    assert tolerance_ms(1.0) == 0.1 and tolerance_ms(0.05) == 0.02
    within = drive(BatchClock("cuda"), median_ms=0.91, per_call_ms=1.0)
    assert within.verdict(0.91, None) is None
    small = drive(BatchClock("cuda"), median_ms=0.001, per_call_ms=0.015)  # below 20 µs: left alone
    assert small.verdict(0.001, None) is None


def test_on_the_cpu_only_a_gross_difference_is_rejected():
    assert drive(BatchClock("cpu"), median_ms=0.5, per_call_ms=1.0).verdict(0.5, None) is None
    clock = drive(BatchClock("cpu"), median_ms=0.05, per_call_ms=1.0)
    assert len(clock.walls[clock.sizes[0]]) == 5
    assert clock.verdict(0.05, None)[0] == "rejected"


def test_skipped_batches_or_another_median_are_rejected():
    assert BatchClock("cpu").verdict(0.5, None)[0] == "rejected"
    clock = drive(BatchClock("cuda"), median_ms=0.5, per_call_ms=0.5)
    assert "another median" in clock.verdict(0.25, None)[1]
    broken = BatchClock("cuda")
    assert broken.on_message({"at": "ready", "median_ms": "fast", "launch_ms": 0.0}, 0.0) == {"batch": 0}
    assert broken.verdict(0.5, None)[0] == "rejected"


def test_the_cover_holds_every_launch_of_the_large_batch():
    clock = drive(BatchClock("cuda"), median_ms=0.004, per_call_ms=0.004, launch_ms=0.04)
    large = clock.sizes[1]
    assert clock.cover_ms >= large * 0.04
    assert drive(BatchClock("cpu"), median_ms=0.5, per_call_ms=0.5).cover_ms == 0.0
