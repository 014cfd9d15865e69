"""What the model is told of ideas already tried: a quarantined kernel's speed is never advertised
(it may be noise or a trick a person has yet to review), an approved one's is."""

import pytest

from searches.engine import context
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def test_a_quarantined_kernels_speed_is_not_advertised():
    problem = d.problem()
    search = d.search(problem=problem)
    idea = d.idea(search=search, title="zeros")
    d.kernel(problem=problem, search=search, idea=idea, median_ms=0.001, quarantined=True)
    d.kernel(problem=problem, search=search, idea=idea, status="incorrect")
    outcome = context.idea_outcome(idea)
    assert outcome.startswith("1/2 correct, under review") and "ms" not in outcome and "x vs" not in outcome

    honest = d.kernel(problem=problem, search=search, idea=idea, median_ms=0.5)
    outcome = context.idea_outcome(idea)
    assert "best 0.5 ms (2.00x vs eager" in outcome and "0.001" not in outcome and honest.quarantined is False


def test_the_paired_eager_time_is_read_from_the_run_unless_the_pairing_was_dropped():
    assert context.paired_eager_ms({"paired": {"eager_ms": 0.25, "dropped": None}}) == 0.25
    assert context.paired_eager_ms({"paired": {"eager_ms": 0.25, "dropped": "helpers used the CPU"}}) is None
    assert context.paired_eager_ms({}) is None


def test_the_runners_advisories_and_a_fallback_reach_the_model_as_notes():
    result = {"advisories": [{"reason": "line 9: the except block falls back to PyTorch (silu)", "code": "partial_replacement"}],
              "fallback": "fell back to PyTorch on untimed call 3 of 9 (silu): its own kernel did not run there"}
    notes = context.runner_notes(result)
    assert notes == ("line 9: the except block falls back to PyTorch (silu)",
                     "it fell back to PyTorch on untimed call 3 of 9 (silu): its own kernel did not run there")
    assert context.runner_notes({"advisories": [{"reason": "x" * 5000}] * 9}) == ("x" * context.NOTE_CHARS,) * context.NOTES_SHOWN
    problem = d.problem()
    kernel = d.kernel(problem=problem, search=d.search(problem=problem))
    kernel.runs.update(result=result)
    assert context.kernel_context(kernel).notes == notes


def test_each_brief_reads_its_kernels_fate_with_the_speedup_the_model_expected_beside_the_one_measured():
    problem = d.problem()
    search = d.search(problem=problem)
    parent = d.kernel(problem=problem, search=search, median_ms=1.0)
    idea = d.idea(search=search, title="tiles", parent_kernel=parent)
    idea.briefs = ["64 rows a block", "one row a warp"]
    idea.save(update_fields=["briefs"])
    d.kernel(problem=problem, search=search, idea=idea, parent=parent, variant=0, median_ms=0.5,
             analysis={"expected_speedup": 3.0})
    d.kernel(problem=problem, search=search, idea=idea, parent=parent, variant=1, median_ms=0.01, quarantined=True)
    first, second = context.brief_verdicts(idea, list(idea.kernels.all()))
    assert first == ("64 rows a block", "correct, 0.5 ms (2.00x vs eager); expected 3.00x vs its parent, got 2.00x")
    assert second == ("one row a warp", "correct, under review (no speed given)")
