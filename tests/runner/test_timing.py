import statistics

import pytest

from runner.common import timing

pytestmark = pytest.mark.serial  # times work on the host's cores: never beside another xdist worker


def test_summary_of_known_samples():
    samples = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.02, 0.98, 5.0, 1.01]
    stats = timing.summarize(samples)
    assert stats["median_ms"] == pytest.approx(statistics.median(samples))
    assert stats["mean_ms"] == pytest.approx(sum(samples) / len(samples))
    assert stats["min_ms"] == 0.9 and stats["max_ms"] == 5.0
    assert stats["n"] == 10
    assert stats["outliers"] == 1  # the 5.0 is reported, not hidden
    assert stats["samples_ms"] == samples
    lo, hi = stats["ci95_ms"]
    assert lo <= stats["median_ms"] <= hi


def test_ci_of_median_narrows_with_more_samples():
    few = timing.summarize([float(i % 7) for i in range(20)])
    many = timing.summarize([float(i % 7) for i in range(2000)])
    assert (many["ci95_ms"][1] - many["ci95_ms"][0]) <= (few["ci95_ms"][1] - few["ci95_ms"][0])


def test_ci_covers_the_median_at_the_right_rate():
    # Order-statistic CI: for n=100 the ranks are about 40 and 60.
    ordered = [float(i) for i in range(100)]
    lo, hi = timing.median_ci95(ordered)
    assert 38 <= lo <= 41 and 58 <= hi <= 61


def test_repetitions_stay_within_bounds():
    assert timing.repetitions(1000.0, 0.5) == timing.MIN_REPS
    assert timing.repetitions(0.001, 0.5) == timing.MAX_REPS
    assert timing.repetitions(1.0, 0.1) == 100


def test_cpu_timer_measures_the_callable():
    import time

    calls = []

    def sleepy(x):
        calls.append(x)
        time.sleep(0.002)
        return x

    measured = timing.time_cpu(sleepy, [[1], [2]], budget_s=0.05)
    stats = timing.summarize(measured["samples_ms"])
    assert 1.9 <= stats["median_ms"] <= 10
    assert {1, 2} <= set(calls)  # the input sets rotate


def test_unseen_work_flags_wall_time_the_device_did_not_see():
    honest = {"samples_ms": [1.0] * 10, "span_ms": [1.1] * 10, "wall_ms": [1.15] * 10}
    hidden = {"samples_ms": [0.01] * 10, "span_ms": [0.1] * 10, "wall_ms": [2.0] * 10}
    assert timing.unseen_work(honest) == ""
    assert "outside the timed stream" in timing.unseen_work(hidden)
    assert timing.unseen_work({"samples_ms": [1.0], "wall_ms": [1.0]}) == ""


def test_a_steady_measurement_settles_once_it_has_enough_calls_and_time():
    steady = [1.0 + 0.001 * (i % 5) for i in range(timing.SETTLE_REPS)]
    assert timing.settled(steady, elapsed_s=timing.SETTLE_S)
    assert not timing.settled(steady[:-1], elapsed_s=1.0)  # too few calls
    assert not timing.settled(steady, elapsed_s=timing.SETTLE_S / 2)  # too short a time
    noisy = [1.0 if i % 2 else 1.5 for i in range(400)]
    assert not timing.settled(noisy, elapsed_s=1.0)  # its median's CI spans the two values


class FakeClock:
    """perf_counter advancing by the time each call of `work` says it took."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def work(self, durations_ms):
        calls = [0]

        def fn(x):
            self.now += durations_ms[calls[0] % len(durations_ms)] / 1000
            calls[0] += 1
            return x

        return fn


@pytest.mark.parametrize("durations, settles", [([2.0], True), ([2.0, 3.0], False)])
def test_cpu_timer_gives_back_its_budget_only_when_settled(monkeypatch, durations, settles):
    clock = FakeClock()
    monkeypatch.setattr(timing, "_perf_counter", clock)
    measured = timing.time_cpu(clock.work(durations), [[1], [2]], budget_s=5.0)
    n = len(measured["samples_ms"])
    assert n == (timing.SETTLE_REPS if settles else timing.MAX_REPS)
