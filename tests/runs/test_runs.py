"""Runs scored on their own: fast_p, "sample 0" and "best of N", pass@k, independence of two runs
on one suite, the migration of old sweeps, and the KernelBench export read by KernelBench's own
analysis (vendored, tests/fixtures/kernelbench_analysis). Verdicts are written directly here; the
real evaluator judges a KernelBench runs folder in test_rejudge_kernelbench.py."""

import importlib
import io
import json
import math

import pytest
from django.apps import apps
from django.core.management import call_command

from runs import scoring
from runs.export import export_run
from runs.models import Run, RunKernel
from runs.selectors import run_scores, suite_runs
from runs.services import run_rejudge
from searches import services
from searches.models import Kernel
from tests.runner import sources
from tests.searches.problem_samples import SOFTMAX

from . import kernelbench_oracle as kernelbench

pytestmark = pytest.mark.django_db

SOLUTION = SOFTMAX.replace("class Model(", "class ModelNew(")
FILES = {1: "1_Softmax_a.py", 2: "2_Softmax_b.py", 3: "3_Softmax_c.py"}
# (problem, sample) -> (status, speedup vs eager, median ms)
CUDA_LOAD_INLINE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
__global__ void scale(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
module = load_inline(name="scale", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=CUDA,
                     functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x):
        return module.run(x.contiguous())
'''
VERDICTS = {(1, 0): ("correct", 2.5, 1.0), (1, 1): ("correct", 0.7, 2.0),
            (2, 0): ("incorrect", None, None), (2, 1): ("correct", 1.2, 1.5),
            (3, 0): ("correct", 0.6, 3.0), (3, 1): ("rejected", None, None)}


@pytest.fixture
def suite():
    files = [(f"level1/{name}", f"# {n}\n{SOFTMAX}".encode()) for n, name in FILES.items()]
    return services.suite_import(user=None, suite_name="S", files=files, device="cpu").suite


def rejudged(suite, name, verdicts=VERDICTS):
    files = [(f"level_1_problem_{p}_sample_{s}_kernel.py", f"# {p}/{s}\n{SOLUTION}".encode()) for p, s in verdicts]
    run, rows = run_rejudge(user=None, suite=suite, files=files, name=name)
    for row in rows:
        judge(row.kernel, *verdicts[(row.number, row.sample)])
    return run


def judge(kernel, status, speedup, median_ms):
    Kernel.objects.filter(pk=kernel.pk).update(status=status, speedup_vs_eager=speedup, median_ms=median_ms,
                                               device_name="test-cpu")


def fast(score, rule):
    return {f["label"]: f["value"] for f in score["rules"][rule]["fast_p"]}


def test_a_run_is_scored_by_sample_0_and_best_of_n_with_pass_at_k(suite):
    score = run_scores(rejudged(suite, "A"))
    assert (score["problems"], score["samples"], score["mode"]) == (3, 2, "KernelLab")
    assert fast(score, "sample0") == {"fast_0": 2 / 3, "fast_0.5": 2 / 3, "fast_0.8": 1 / 3, "fast_1": 1 / 3,
                                      "fast_1.5": 1 / 3, "fast_2": 1 / 3}
    assert fast(score, "best") == {"fast_0": 1, "fast_0.5": 1, "fast_0.8": 2 / 3, "fast_1": 2 / 3,
                                   "fast_1.5": 1 / 3, "fast_2": 1 / 3}
    assert score["rules"]["best"]["geomean"] == pytest.approx((2.5 * 1.2 * 0.6) ** (1 / 3))
    oracle = kernelbench.calc_pass_at_k()
    counts = [(2, 2), (2, 1), (2, 1)]
    for row in score["pass_at_k"]:
        expected = sum(oracle(n, c, row["k"]) for n, c in counts) / 3
        assert row["value"] == pytest.approx(expected)
        assert row["value"] == pytest.approx(sum(1 - math.comb(n - c, row["k"]) / math.comb(n, row["k"])
                                                 for n, c in counts) / 3)


@pytest.mark.parametrize("n, c, k", [(10, 3, 1), (10, 3, 5), (5, 0, 2), (5, 5, 3), (7, 2, 6)])
def test_pass_at_k_is_the_unbiased_estimator(n, c, k):
    assert scoring.pass_at_k(n, c, k) == pytest.approx(kernelbench.calc_pass_at_k()(n, c, k))


def test_a_suite_with_no_run_has_no_score_and_two_runs_are_independent(suite):
    assert not suite_runs(suite).exists()
    a = rejudged(suite, "A")
    b = rejudged(suite, "B", {(p, 0): ("incorrect", None, None) for p in FILES})
    before = run_scores(b)
    extra = services.kernel_submit(user=None, problem=suite.members.get(number=2).problem, source=SOLUTION)
    judge(extra, "correct", 9.0, 0.1)
    RunKernel.objects.create(run=a, member=suite.members.get(number=2), kernel=extra, sample=2)
    assert fast(run_scores(b), "best") == fast(before, "best") == {label: 0 for label in fast(before, "best")}
    assert fast(run_scores(a), "best")["fast_2"] == 2 / 3


def test_export_is_read_unchanged_by_kernelbench_analysis_and_agrees(suite, tmp_path):
    run = rejudged(suite, "A")
    out = io.StringIO()
    call_command("export_run", "A", str(tmp_path / "A"), stdout=out)
    assert "6 kernel files written" in out.getvalue()
    assert sorted(p.name for p in (tmp_path / "A").glob("level_*")) == sorted(
        f"level_1_problem_{p}_sample_{s}_kernel.py" for p, s in VERDICTS)
    results = json.loads((tmp_path / "A" / "eval_results.json").read_text())
    assert set(results["1"][0]) == {"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}
    got = kernelbench.analyze_greedy_eval({1: FILES}, run_name="A", hardware="-", baseline="-", level=1,
                                          eval_results_dir=str(tmp_path),
                                          baseline_file=str(tmp_path / "A" / "baseline_time_kernellab_eager.json"))
    page = run_scores(run)
    assert got["fast_p"] == pytest.approx({str(p): fast(page, "sample0")[f"fast_{p:g}"] for p in scoring.THRESHOLDS})
    assert got["geo_mean_speedup"] == pytest.approx(page["rules"]["sample0"]["geomean"])
    assert got["pass_at_k"]["averages"]["avg_pass@1"] == pytest.approx(page["pass_at_k"][0]["value"])


def test_exported_cuda_passes_kernelbench_static_checker_and_nvrtc_is_named(suite, tmp_path):
    checker = kernelbench.static_checker()
    verdicts = {(1, 0): ("correct", 1.5, 1.0), (2, 0): ("correct", 1.5, 1.0)}
    run = rejudged(suite, "C", verdicts)
    Kernel.objects.filter(pk=run.entries.get(member__number=1).kernel_id).update(source=CUDA_LOAD_INLINE)
    Kernel.objects.filter(pk=run.entries.get(member__number=2).kernel_id).update(source=sources.CUPY_SOFTMAX_KERNEL)
    report = export_run(run, tmp_path)
    inline = (tmp_path / "level_1_problem_1_sample_0_kernel.py").read_text()
    assert checker.validate_kernel_static(inline, backend="cuda", precision="fp32")[0]
    assert list(report["notes"]) == ["level_1_problem_2_sample_0_kernel.py"]
    assert "NVRTC through cupy" in json.loads((tmp_path / "export_notes.json").read_text())["incompatible"][
        "level_1_problem_2_sample_0_kernel.py"]
    nvrtc = (tmp_path / "level_1_problem_2_sample_0_kernel.py").read_text()
    assert not checker.validate_kernel_static(nvrtc, backend="cuda", precision="fp32")[0]


def test_old_sweeps_and_suite_searches_become_runs(suite):
    member = suite.members.get(number=1)
    for n in range(2):
        services.kernel_submit(user=None, problem=member.problem, source=SOLUTION, name=f"S: level1/x{n}.py")
    migration = importlib.import_module("runs.migrations.0002_sweeps_become_runs")
    migration.forwards(apps, None)
    run = Run.objects.get(suite=suite, source="migrated")
    assert (run.name, run.samples) == ("Sweep (migrated)", 2)
    assert sorted(run.entries.values_list("sample", flat=True)) == [0, 1]


@pytest.mark.parametrize("status, code, errors, library, expected", [
    ("correct", "", [1e-6], False, (True, 2.0, "")),
    ("incorrect", "", [5e-3], False, (True, 2.0, "")),  # within KernelBench's atol: allclose passes
    ("incorrect", "", [0.5], False, (False, None, "undecided")),  # rtol * |reference| is not stored
    ("rejected", "partial_replacement", [], False, (False, None, "undecided")),  # never ran
    ("rejected", "partial_replacement", [], True, (False, None, "")),
    ("compile_error", "", [], False, (False, None, "")),
])
def test_kernelbench_rule_reads_the_stored_verdict(status, code, errors, library, expected):
    from runs import kernelbench_mode

    kernel = Kernel(status=status, reason_code=code)
    result = {"correctness": {"per_distribution": [{"name": "get_inputs", "max_abs_err": e} for e in errors]
                              + [{"name": "offset", "max_abs_err": 9.0}]},
              "timing": {"mean_ms": 1.5, "median_ms": 1.0}, "paired": {"eager_ms": 3.0}}
    assert kernelbench_mode.verdict(kernel, result, library) == expected


def test_searches_started_over_a_suite_become_one_run_per_name(suite):
    from tests.searches import dashboard_data as d

    member = suite.members.get(number=1)
    for name in ("sweep one", "sweep one", "other"):
        search = d.search(problem=member.problem, name=f"{name}: {member.problem.name}")
    judge(Kernel.objects.create(problem=member.problem, search=search, source=SOLUTION), "correct", 1.7, 1.0)
    migration = importlib.import_module("runs.migrations.0002_sweeps_become_runs")
    migration.forwards(apps, None)
    runs = {run.name: run for run in Run.objects.filter(suite=suite)}
    assert set(runs) == {"sweep one (migrated)", "other (migrated)"}
    assert sorted(runs["sweep one (migrated)"].run_searches.values_list("sample", flat=True)) == [0, 1]
    assert runs["sweep one (migrated)"].samples == 2
    # A search run's kernels count as their search's sample, in that run only.
    assert fast(run_scores(runs["other (migrated)"]), "best")["fast_1.5"] == 1 / 3
    assert fast(run_scores(runs["sweep one (migrated)"]), "best")["fast_0"] == 0
