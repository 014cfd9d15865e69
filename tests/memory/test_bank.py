"""The idea bank's arithmetic on outcomes passed in: stats per key, priors of similar problems, the ranking,
calibration and cost per point."""

import pytest

from memory import bank
from memory.keys import IdeaKey

KEY = IdeaKey("softmax", "small", "NVIDIA H200", "cuda_nvrtc", "")


def outcome(technique, gain, *, idea=1, search=1, cost=0.1, expected=None, failures=(), model="m", family="softmax"):
    key = IdeaKey(family, KEY.shape_class, KEY.device_model, KEY.language, technique)
    return bank.Outcome(key=key, idea_id=idea, search_id=search, title=f"{technique} {idea}", model=model, gain=gain,
                        expected=expected, cost_usd=cost, failures=failures, kernel_ids=(idea * 10,))


def test_stats_per_key_count_attempts_successes_gains_cost_and_failures():
    rows = [outcome("tiling", 1.5, idea=1), outcome("tiling", 1.1, idea=2), outcome("tiling", 0.9, idea=3),
            outcome("tiling", None, idea=4, failures=("incorrect: wrong on the offset inputs",)),
            outcome("tiling", None, idea=5, failures=("incorrect: wrong on the offset inputs", "compile_error"))]
    [stats] = bank.summarise(rows).values()
    assert (stats.attempts, stats.successes) == (5, 2)
    assert stats.success_rate == pytest.approx(0.4)
    assert (stats.median_gain, stats.best_gain) == (1.1, 1.5)  # of the three with a trusted kernel
    assert stats.cost_usd == pytest.approx(0.5)
    assert stats.failures == (("incorrect: wrong on the offset inputs", 2), ("compile_error", 1))
    assert stats.examples == (("tiling 1", 1.5), ("tiling 2", 1.1))
    assert stats.kernel_ids == (10, 20, 30, 40, 50)


def test_priors_are_of_similar_problems_only_the_search_itself_left_out_best_first():
    rows = [outcome("fusion", 1.2, idea=1), outcome("tiling", 2.0, idea=2), outcome("tiling", 1.8, idea=3),
            outcome("tensor-cores", None, idea=4), outcome("tiling", 3.0, idea=5, family="matmul"),
            outcome("fusion", 5.0, idea=6, search=9)]
    shown = bank.priors(KEY, rows, exclude_search=9)
    # Rated by what one more attempt may gain: a failure once is not written off against a small success.
    assert [s.technique for s in shown if s.attempts] == ["tiling", "tensor-cores", "fusion"]
    assert shown[0].best_gain == 2.0  # the matmul outcome is not similar
    # Laplace's rate times the gain: tiling 3/4 of 0.9; tensor-cores 1/3 of the hoped 0.9 (the best median gain);
    # fusion 2/3 of 0.2; never tried: 1/2 of the hoped 0.9, between the technique that works and the rest.
    assert [round(s.rating, 3) for s in shown if s.attempts] == [0.675, 0.3, 0.133]
    untried = [s for s in shown if not s.attempts]
    assert len(untried) == 10 and {round(s.rating, 3) for s in untried} == {0.45}
    assert [s.technique for s in shown][:2] == ["tiling", "vectorised-loads"]
    assert bank.priors(KEY, [outcome("tiling", 3.0, family="matmul")]) == []  # nothing similar: no section


def test_the_ranking_follows_the_model_without_weight_and_the_priors_with_it():
    priors = bank.priors(KEY, [outcome("tiling", 2.0, idea=i) for i in range(3)]
                         + [outcome("fusion", None, idea=9)])
    reply = ["fusion", "tiling"]
    assert bank.rank(reply, priors, 0.0) == [0, 1]
    assert bank.rank(reply, priors, 1.0) == [1, 0]
    assert bank.rank(reply, priors, 0.1) == [0, 1]  # the model's order outweighs a small difference
    assert bank.rank(reply, [], 1.0) == [0, 1]


def test_calibration_and_dollars_per_point():
    rows = [outcome("tiling", 1.2, expected=1.5, model="a", cost=0.2), outcome("tiling", 1.4, expected=2.0, model="a"),
            outcome("fusion", None, expected=1.3, model="b"), outcome("fusion", 1.1, model="b")]
    [a] = bank.calibration(rows)
    assert (a.group, a.ideas, a.predicted) == ("a", 2, 1.75) and a.measured == pytest.approx(1.3)
    assert a.ratio == pytest.approx((1.2 / 1.5 + 1.4 / 2.0) / 2)
    assert bank.dollars_per_point(rows[:2]) == pytest.approx(0.3 / 60)
    assert bank.dollars_per_point([rows[2]]) is None


def test_the_ranking_corrects_a_models_predictions_by_how_they_held():
    priors = bank.priors(KEY, [outcome("tiling", 2.0, idea=i) for i in range(3)])
    reply, expected = ["tiling", "fusion"], [None, 3.0]  # fusion never tried here: the model promises 3x
    assert bank.rank(reply, priors, 1.0, expected=expected, trust=1.0) == [1, 0]  # its word, taken
    assert bank.rank(reply, priors, 1.0, expected=expected, trust=0.5) == [0, 1]  # it promises twice what it gets
    assert bank.rank(reply, priors, 1.0, expected=expected) == [0, 1]  # no record of its predictions: ratings


def test_a_models_calibration_on_its_own():
    rows = [outcome("tiling", 1.2, expected=1.5, model="a"), outcome("tiling", 1.5, expected=1.5, model="b")]
    assert bank.calibration_of("a", rows).ratio == pytest.approx(0.8)
    assert bank.calibration_of("c", rows) is None
