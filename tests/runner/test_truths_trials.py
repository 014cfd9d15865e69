"""The judge's trials as the truths and the degenerate check draw them (runner/truths.trials): a
stress distribution stops at inputs without floating tensors, or at a truth that is not finite."""

import types

import torch

from runner.inside import truths


def problem(get_inputs):
    return types.SimpleNamespace(get_inputs=get_inputs)


def drawn(module, name, reference, count=3):
    return [(trial, skip) for trial, _, _, skip in
            truths.trials(module, name, 1, 0, "cpu", reference, None, count)]


def test_a_stress_distribution_without_floating_inputs_is_skipped():
    ints = problem(lambda: [torch.randint(0, 9, (4,))])
    assert drawn(ints, "uniform", lambda x: x + 1) == [(0, "no floating inputs")]
    assert drawn(ints, "get_inputs", lambda x: x + 1) == [(0, None), (1, None), (2, None)]  # the module's own


def test_a_non_finite_truth_stops_a_stress_distribution_but_not_the_modules_own():
    floats = problem(lambda: [torch.randn(4)])
    assert drawn(floats, "offset", lambda x: x / 0.0) == [(0, "the truth is not finite on these inputs")]
    assert drawn(floats, "get_inputs", lambda x: x / 0.0, count=2) == [(0, None), (1, None)]
    assert drawn(floats, "uniform", lambda x: x * 2.0, count=2) == [(0, None), (1, None)]
