"""What "correct" and "timed" mean, pinned: the trials, input distributions, sampled positions, late replay,
timing loop, batch clock and disturbance rules that a faster evaluator must leave as they are. Changing one
is a decision about the judge, made in docs/ARCHITECTURE.md and here, never a side effect of a speed-up."""

from runner.common import rules, sampling, timing, verify
from runner.host import batchclock, gpustate
from runner.inside import jobs, problem, replay


def test_correctness_trials_and_distributions():
    assert problem.DISTRIBUTIONS == ("get_inputs", "uniform", "offset")
    assert problem.TRIALS == {"get_inputs": 3, "uniform": 1, "offset": 1}
    assert (problem.OFFSET_MEAN, problem.OFFSET_STD) == (1000.0, 0.1)
    assert rules.KERNELBENCH_TRIALS == 5
    assert rules.trials(rules.KERNELLAB, problem.TRIALS) == problem.TRIALS
    assert rules.trials(rules.KERNELBENCH, problem.TRIALS) == {"get_inputs": 5}


def test_the_pass_rule_and_the_sample():
    assert sampling.SAMPLE == 1 << 22  # 4M positions of every output larger than that
    assert verify.passes(1.0, 0.0) and not verify.passes(1.0001, 0.0)
    assert verify.passes(4.0, 2.0) and not verify.passes(4.0001, 2.0)


def test_the_timing_loop_and_the_late_replay():
    assert (timing.MIN_REPS, timing.MAX_REPS, timing.WARMUP_S) == (10, 500, 0.05)
    assert (timing.SETTLE_REPS, timing.SETTLE_S, timing.SETTLE_CI, timing.SETTLE_EVERY) == (100, 0.1, 0.005, 25)
    assert timing.L2_FLUSH_BYTES == 256 * 1024**2
    assert (replay.REPLAY_BYTES, replay.UNTIMED_BLOCK, replay.SHIPPED_BYTES) == (1024**3, 8, 256 * 1024**2)
    assert (jobs.INPUT_SETS_MAX, jobs.INPUT_SETS_BYTES) == (8, 4 * 1024**3)


def test_the_batch_clock_and_the_disturbance_rules():
    assert batchclock.ROUNDS == {"cuda": 3, "cpu": 5} and batchclock.DISTURBED_ROUNDS == 8
    assert (batchclock.TARGET_MS, batchclock.SMALL, batchclock.LARGE_MIN, batchclock.LARGE_MAX) == (20.0, 4, 8, 64)
    assert batchclock.tolerance_ms(1.0) == 0.1 and batchclock.tolerance_ms(0.01) == 0.02
    assert (batchclock.CPU_FACTOR, batchclock.WALL_FACTOR, batchclock.LAUNCH_EXPOSED_MS) == (2.0, 3.0, 0.05)
    assert (gpustate.ATTEMPTS, gpustate.CLOCK_MOVED) == (3, 0.05)
