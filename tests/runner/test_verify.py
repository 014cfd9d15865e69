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


def _compared(monkeypatch, chunk, x, t):
    monkeypatch.setattr(verify, "COMPARE_CHUNK", chunk)
    return verify.err_ratio(x, t, 1e-4, 1e-4), verify.mismatch(x, t, 1e-4, 1e-4, whole=True)


@pytest.mark.parametrize("where", ["none", "nan", "inf", "matched_inf", "tail"])
def test_a_slice_at_a_time_gives_the_whole_comparisons_answer(monkeypatch, where):
    """Large outputs are compared in slices (float64 copies of 128 MB, not of the whole output):
    every kind of answer is the one the whole comparison gives, on rows larger and smaller than a slice."""
    torch.manual_seed(0)
    for shape in [(37, 11, 5), (3, 101), (1, 1, 257)]:
        t = torch.randn(shape, dtype=torch.float64)
        x = (t + torch.randn(shape, dtype=torch.float64) * 1e-5).float()
        flat_x, flat_t = x.view(-1), t.view(-1)
        if where == "nan":
            flat_x[flat_x.numel() // 2] = math.nan
        elif where == "inf":
            flat_x[-1] = math.inf
        elif where == "matched_inf":
            flat_t[7], flat_x[7] = -math.inf, -math.inf
        elif where == "tail":
            x[..., -1] += 1.0
        whole = _compared(monkeypatch, 1 << 30, x, t)
        sliced = _compared(monkeypatch, 16, x, t)
        assert sliced == whole, (shape, where)
        assert sliced[0] != (0.0, 0.0)
    assert (whole[0][0] == math.inf) == (where in ("nan", "inf"))
    if where == "tail":
        assert whole[1]["pattern"] == "the last column" and whole[1]["wrong"] == 1


def test_slices_are_views_in_order_of_at_most_a_chunk(monkeypatch):
    monkeypatch.setattr(verify, "COMPARE_CHUNK", 16)
    x = torch.arange(6 * 40.0).reshape(6, 40).t()  # not contiguous: slicing still copies nothing
    parts = [p for (p,) in verify.slices(x)]
    assert all(p.numel() <= 16 and p.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() for p in parts)
    assert torch.equal(torch.cat([p.reshape(-1) for p in parts]), x.reshape(-1))


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


@pytest.mark.gpu
def test_comparing_a_large_output_on_the_gpu_holds_no_float64_copy_of_it():
    """A 1 GiB fp32 output against its float64 truth: the comparison's own temporaries stay within a
    few slices (whole, they were several float64 copies of the output: 6 GB outputs ran an 80 GB GPU out)."""
    truth = torch.randn(1 << 28, dtype=torch.float64, device="cuda")
    out = truth.float()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated()
    err, _ = verify.err_ratio(out, truth, 1e-4, 1e-4)
    found = verify.mismatch(out, truth, 1e-4, 1e-4, whole=True)
    extra = torch.cuda.max_memory_allocated() - held
    assert err < 1.0 and found["wrong"] == 0
    assert extra < (1 << 30), f"the comparison took {extra / 2**20:.0f} MiB beside the output and its truth"
