import math

import pytest
import torch

from runner.common import dispatchmode, verify


def test_err_ratio_scales_by_tolerance():
    truth = torch.tensor([1.0, 100.0], dtype=torch.float64)
    x = torch.tensor([1.0 + 1e-4, 100.0], dtype=torch.float32)
    err, abs_err = verify.err_ratio(x, truth, 1e-4, 1e-4)
    assert err == pytest.approx(1e-4 / (1e-4 + 1e-4), rel=1e-3)
    assert abs_err == pytest.approx(1e-4, rel=1e-2)


def test_non_finite_values_must_sit_where_the_truth_has_them():
    truth = torch.tensor([1.0, float("nan"), float("inf")], dtype=torch.float64)
    assert verify.err_ratio(torch.tensor([1.0, float("nan"), float("inf")]), truth, 1e-4, 1e-4)[0] == 0.0
    assert verify.err_ratio(torch.tensor([1.0, 0.0, float("inf")]), truth, 1e-4, 1e-4)[0] == math.inf
    assert verify.err_ratio(torch.tensor([1.0, float("nan"), -float("inf")]), truth, 1e-4, 1e-4)[0] == math.inf
    finite_truth = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert verify.err_ratio(torch.tensor([1.0, float("nan")]), finite_truth, 1e-4, 1e-4)[0] == math.inf


def test_an_exact_match_is_no_error_at_zero_tolerance():
    """Integer outputs (argmax) have no tolerance: 0/0 must not turn an exact match into inf, which
    as the fp32 reference's error would have let any output pass."""
    truth = torch.tensor([3, 0, 7], dtype=torch.int64)
    assert verify.err_ratio(truth.clone(), truth, 0.0, 0.0) == (0.0, 0.0)
    assert verify.err_ratio(torch.tensor([3, 1, 7]), truth, 0.0, 0.0) == (math.inf, 1.0)
    assert not verify.passes(verify.err_ratio(torch.zeros(3, dtype=torch.int64), truth, 0.0, 0.0)[0],
                             verify.err_ratio(truth.clone(), truth, 0.0, 0.0)[0])


def test_pass_rule_allows_twice_pytorchs_own_error():
    assert verify.passes(0.9, 0.0)
    assert verify.passes(3.0, 2.0)
    assert not verify.passes(5.0, 2.0)
    assert not verify.passes(math.inf, 1.0)


def test_output_form_must_match_exactly():
    expected = [{"shape": (2, 3), "dtype": torch.float32, "device": "cpu"}]
    verify.check_output_form(torch.zeros(2, 3), expected)
    with pytest.raises(verify.Rejected, match="dtype"):
        verify.check_output_form(torch.zeros(2, 3, dtype=torch.float64), expected)
    with pytest.raises(verify.Rejected, match="shape"):
        verify.check_output_form(torch.zeros(3, 2), expected)
    with pytest.raises(verify.Rejected, match="not a tensor"):
        verify.check_output_form(3.0, expected)


def test_aliasing_and_mutation_are_caught():
    x = torch.randn(16)
    with pytest.raises(verify.Rejected, match="shares memory"):
        verify.check_no_alias([x.view(4, 4)], [x])
    verify.check_no_alias([torch.empty(16)], [x])
    original = torch.randn(8)
    given = original.clone()
    verify.check_not_mutated([original], [given])
    given[3] += 1
    with pytest.raises(verify.Rejected, match="wrote into its input"):
        verify.check_not_mutated([original], [given])


def test_op_recorder_tells_bookkeeping_from_computation():
    x = torch.randn(4, 8)
    with dispatchmode.OpRecorder() as recorder:
        y = torch.empty_like(x).view(8, 4)
        x.contiguous().reshape(32)
    assert verify.computing_ops(recorder.ops) == []
    with dispatchmode.OpRecorder() as recorder:
        torch.softmax(x, dim=1)
    assert any("softmax" in op for op in verify.computing_ops(recorder.ops))
    del y


def test_tampering_with_guarded_functions_is_seen():
    before = verify.snapshot()
    original = torch.allclose
    try:
        torch.allclose = lambda *a, **k: True
        with pytest.raises(verify.Rejected, match="allclose"):
            verify.check_untouched(before)
    finally:
        torch.allclose = original
    verify.check_untouched(before)


def test_precision_detection_from_source():
    assert verify.detect_precision("float acc;", [], [torch.float32]) == "fp32"
    assert verify.detect_precision("__half2 h;", [], [torch.float32]) == "fp16"
    assert verify.detect_precision("__nv_bfloat16 b;", [], [torch.float32]) == "bf16"
    assert verify.detect_precision("__half h; __nv_bfloat16 b;", [], [torch.float32]) == "mixed"
