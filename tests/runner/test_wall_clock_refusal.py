"""A time the parent's wall clock refuses is judged once more, in a fresh sandbox, before the kernel is named
a cheat (runner/host/evaluation.py, `_judge_again`): a forger is refused twice, and a kernel whose first time
was refused but whose second is borne out keeps the second verdict; either says why it was judged twice. Plain
processes here (no cgroup), so the CPU's batch clock is the wall clock, as the GPU's always is."""

from pathlib import Path

import pytest

import runner
from runner.cli import summary
from runner.host import isolation

from . import sources

ATTACKS = Path(__file__).with_name("attacks")
FORGE = "            forge()"

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # the wall clock: never beside another xdist worker


@pytest.fixture(scope="module")
def wall_pool():
    patch = pytest.MonkeyPatch()
    patch.setenv("KERNELLAB_SANDBOX_ISOLATION", "process")
    for name in isolation.held_secrets():  # a plain process could read them: the runner refuses to start one
        patch.delenv(name)
    try:
        with runner.Pool(device="cpu", size=1) as pool:
            yield pool
    finally:
        patch.undo()


def forger(marker: Path | None = None) -> str:
    """The problem whose code, in the candidate's sandbox, reports times twenty times lower than measured;
    with `marker`, only until that file exists (it makes it), so only in the first evaluation."""
    # calls of a few ms, so that a busy host's stalls are small beside the batches
    source = (ATTACKS / "forge_timing.py").read_text().replace("torch.randn(64, 1024)", "torch.randn(1024, 2048)")
    assert FORGE in source and "1024, 2048" in source
    if marker is None:
        return source
    return "import os\n" + source.replace(
        FORGE, f"            if not os.path.exists({str(marker)!r}):\n"
               f"                forge()\n                open({str(marker)!r}, 'w').close()")


def test_a_forged_time_is_refused_in_both_evaluations(wall_pool):
    result = wall_pool.evaluate(forger(), sources.SOFTMAX_KERNEL, seed=6)
    assert result["status"] == "rejected", result["reason"]
    assert "below what the parent's clock allows" in result["reason"]
    assert result["reason"].endswith("the same in a second evaluation, in a fresh sandbox"), result["reason"]
    assert result["timing"] is None and "wall_clock_refused" not in result
    assert result["judged_again"].startswith("the parent's clock refused the time of a first evaluation: the "
                                             "reported per-call time"), result["judged_again"]
    batch = next(m for m in result["measurements"] if m["what"] == "batch")
    assert batch["slope_ms"] > 3 * batch["reported_ms"]


def test_a_refusal_the_second_evaluation_does_not_bear_out_leaves_that_verdict(wall_pool, tmp_path):
    marker = tmp_path / "forged-once"
    result = wall_pool.evaluate(forger(marker), sources.SOFTMAX_KERNEL, seed=6)
    assert marker.exists()  # the first evaluation forged
    assert result["status"] == "correct", result["reason"]
    assert result["timing"]["median_ms"] > 0 and "wall_clock_refused" not in result
    assert result["judged_again"].startswith("the parent's clock refused the time of a first evaluation: the "
                                             "reported per-call time"), result["judged_again"]
    assert result["advisories"] == []
    assert "\njudged twice: the parent's clock refused" in summary(result)  # what `python -m runner` prints
    honest = wall_pool.evaluate(forger(marker), sources.SOFTMAX_KERNEL, seed=7)  # the marker made: it forges no more
    assert honest["status"] == "correct" and honest["judged_again"] is None, honest["reason"]
