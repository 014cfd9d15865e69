"""Suite scores from kernels stored in the database, against fast_p and geomeans worked by hand."""

import math

import pytest

from searches import selectors, services
from searches.models import Kernel, Problem, Suite, SuiteProblem

from .problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db

H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"


def problem(n):
    # Distinct sources: a comment line per problem.
    return services.problem_create(user=None, name=f"P{n}", source=f"# {n}\n" + SOFTMAX, validate=False)


def kernel(p, status="correct", eager=None, compile=None, device=H200, quarantined=False):
    return Kernel.objects.create(problem=p, status=status, speedup_vs_eager=eager, speedup_vs_compile=compile,
                                 device_name=device, quarantined=quarantined)


@pytest.fixture
def suite():
    suite = Suite.objects.create(name="S")
    p = {n: problem(n) for n in range(1, 8)}
    for n, pr in p.items():
        SuiteProblem.objects.create(suite=suite, problem=pr, level=1, number=n)
    kernel(p[1], eager=1.2, compile=0.9)
    kernel(p[1], eager=3.0, compile=2.0)  # P1's best
    kernel(p[2], eager=0.25, compile=0.1)
    kernel(p[3], status="incorrect")
    kernel(p[4], status="rejected", eager=50.0, compile=40.0)  # a cheat caught: never a win
    kernel(p[5], eager=10.0, compile=8.0, quarantined=True)  # noisy: counted apart
    kernel(p[6], eager=4.0, compile=3.0, device=H100)  # another GPU model only
    kernel(p[7], eager=2.0, compile=1.0)  # exactly 2x and 1x: not "more than"
    kernel(p[7], status="pending", device="")  # not run yet: ignored
    Kernel.objects.create(problem=problem(99), status="correct", speedup_vs_eager=9.0, device_name=H200)  # not in S
    return suite


def test_fast_p_geomean_and_counts_per_gpu_model(suite):
    scores = {s["device_name"]: s for s in selectors.suite_scores(suite)}
    assert set(scores) == {H100, H200}
    h200 = scores[H200]
    assert h200["problems"] == 7
    counts = lambda baseline: {k: v["count"] for k, v in h200["fast_p"][baseline].items()}  # noqa: E731
    # Correct and trusted: P1 (3.0 / 2.0), P2 (0.25 / 0.1), P7 (2.0 / 1.0).
    assert counts("eager") == {"fast_0": 3, "fast_1": 2, "fast_1.5": 2, "fast_2": 1}
    assert counts("compile") == {"fast_0": 3, "fast_1": 1, "fast_1.5": 1, "fast_2": 0}
    assert h200["fast_p"]["eager"]["fast_1"]["fraction"] == pytest.approx(2 / 7)
    assert h200["geomean"]["eager"] == pytest.approx((3.0 * 0.25 * 2.0) ** (1 / 3))
    assert h200["geomean"]["compile"] == pytest.approx((2.0 * 0.1 * 1.0) ** (1 / 3))
    assert h200["counts"] == {"correct": 3, "quarantined": 1, "rejected": 1, "uses_pytorch": 0, "incorrect": 1, "error": 0,
                              "none": 1}
    assert [k.problem.name for k in h200["cheats"]] == ["P4"]
    best = {r["number"]: r for r in h200["rows"]}
    assert best[1]["best_kernel"].speedup_vs_eager == 3.0 and best[5]["best_kernel"] is None
    h100 = scores[H100]
    assert {k: v["count"] for k, v in h100["fast_p"]["eager"].items()} == {
        "fast_0": 1, "fast_1": 1, "fast_1.5": 1, "fast_2": 1}
    assert h100["geomean"]["eager"] == pytest.approx(4.0)
    assert h100["counts"]["none"] == 6


def test_export_is_plain_data_with_the_same_numbers(suite):
    export = selectors.suite_scores_export(suite)
    h200 = next(s for s in export["scores"] if s["device_name"] == H200)
    assert h200["fast_p"]["eager"]["fast_1"]["count"] == 2
    row = next(r for r in h200["rows"] if r["number"] == 1)
    assert row["best_kernel_code"] == str(Kernel.objects.get(problem__name="P1", speedup_vs_eager=3.0).code)
    assert math.isclose(h200["geomean"]["eager"], 1.5 ** (1 / 3))
    assert h200["cheats"][0]["problem_code"] == str(Problem.objects.get(name="P4").code)


def test_an_empty_suite_has_no_scores():
    assert selectors.suite_scores(Suite.objects.create(name="empty")) == []


def make_degenerate(p: Problem, why="its output is all zeros (within its tolerance) for every input") -> None:
    p.validation_status, p.validation = Problem.Validation.OK, {"status": "ok", "degenerate": why}
    p.save()


def test_a_degenerate_problem_is_marked_and_left_out_of_the_geomean_unless_asked(suite, client, django_user_model):
    p1 = Problem.objects.get(name="P1")
    make_degenerate(p1)
    h200 = next(s for s in selectors.suite_scores(suite) if s["device_name"] == H200)
    assert h200["degenerate"] == 1
    assert h200["fast_p"]["eager"]["fast_0"]["count"] == 3  # still counted, marked in its row
    assert h200["geomean"]["eager"] == pytest.approx((0.25 * 2.0) ** (1 / 2))  # P1's 3.0 left out
    rows = [dict(r) for r in h200["rows"]]
    assert selectors.rows_score(rows, include_degenerate=True)["geomean"]["eager"] == pytest.approx(
        (3.0 * 0.25 * 2.0) ** (1 / 3))
    export = next(s for s in selectors.suite_scores_export(suite)["scores"] if s["device_name"] == H200)
    assert [r["number"] for r in export["rows"] if r["degenerate"]] == [1]

    client.force_login(django_user_model.objects.create_user("viewer", password="pw-for-tests-only"))
    page = client.get(f"/suites/{suite.code}/").content.decode()
    # marked in each GPU model's table (H200 and H100), left out of the H200 geomean it was in
    assert "1 degenerate left out" in page and page.count("degenerate problem</span>") == 2
    problem_page = client.get(f"/problems/{p1.code}/").content.decode()
    assert "This problem is degenerate:" in problem_page and "all zeros" in problem_page


def test_a_partial_replacement_is_counted_apart_from_cheats(suite):
    p3 = Problem.objects.get(name="P3")  # its only kernel is incorrect
    partial = Kernel.objects.create(problem=p3, status="rejected", reason_code="partial_replacement",
                                    reason="forward uses PyTorch for conv3d, group_norm; allowed when the search "
                                           "allows library calls", device_name=H200)
    h200 = next(s for s in selectors.suite_scores(suite) if s["device_name"] == H200)
    assert h200["counts"]["uses_pytorch"] == 1 and h200["counts"]["rejected"] == 1  # P4's cheat only
    assert [k.problem.name for k in h200["cheats"]] == ["P4"] and h200["uses_pytorch"] == [partial]
    assert next(r for r in h200["rows"] if r["number"] == 3)["outcome"] == "uses_pytorch"
    export = next(s for s in selectors.suite_scores_export(suite)["scores"] if s["device_name"] == H200)
    assert [c["problem_code"] for c in export["cheats"]] == [str(Problem.objects.get(name="P4").code)]
    assert [c["kernel_code"] for c in export["uses_pytorch"]] == [str(partial.code)]
