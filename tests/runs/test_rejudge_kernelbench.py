"""A KernelBench runs folder re-judged as one run through the real queue, evaluator and runner
(CPU), then exported and read by KernelBench's own analysis (vendored): 3 level-1-like problems,
2 samples each, among them a wrong kernel and a partial replacement (work left to PyTorch)."""

import io

import pytest
from django.core.management import call_command

from evaluation.worker import EvaluationWorker
from runs import scoring
from runs.models import Run
from runs.selectors import run_scores
from searches import services
from searches.models import Kernel
from tests.runner import sources

from . import kernelbench_oracle as kernelbench

FILES = {1: ("1_Softmax.py", sources.SOFTMAX_PROBLEM), 2: ("2_SiLU.py", sources.SILU_PROBLEM),
         3: ("3_LayerNorm.py", sources.LAYERNORM_PROBLEM)}
WRONG_SILU = sources.SILU_KERNEL.replace("y[i] = x[i] / (1.0f + expf(-x[i]))", "y[i] = x[i]")
SAMPLES = {(1, 0): sources.SOFTMAX_KERNEL, (1, 1): sources.SOFTMAX_BY_TORCH,
           (2, 0): WRONG_SILU, (2, 1): sources.SILU_KERNEL,
           (3, 0): sources.LAYERNORM_EXACT_KERNEL, (3, 1): sources.LAYERNORM_EXACT_KERNEL + "\n# again\n"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the worker's job threads have connections of their own
def test_a_kernelbench_runs_folder_is_judged_as_one_run_and_exported(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELLAB_BASELINE_COMPILE", "0")
    problems = [(f"level1/{name}", source.encode()) for name, source in FILES.values()]
    services.suite_import(user=None, suite_name="KB", files=problems, device="cpu")
    folder = tmp_path / "runs" / "model_x"
    folder.mkdir(parents=True)
    for (p, s), source in SAMPLES.items():
        (folder / f"level_1_problem_{p}_sample_{s}_kernel.py").write_text(source)

    out = io.StringIO()
    call_command("rejudge", str(folder), "--suite", "KB", stdout=out)
    assert "Run “model_x”" in out.getvalue() and "6 queued, 0 unmatched, 0 refused, of 6 files." in out.getvalue()
    worker = EvaluationWorker(name="rejudge-cpu", device="cpu", pool_size=0, rekick_seconds=0, jobs_in_flight=1)
    assert worker.run(once=True) == 6

    run = Run.objects.get(name="model_x")
    verdicts = {(e.member.number, e.sample): Kernel.objects.get(pk=e.kernel_id).status for e in run.entries.all()}
    assert verdicts == {(1, 0): "correct", (1, 1): "rejected", (2, 0): "incorrect", (2, 1): "correct",
                        (3, 0): "correct", (3, 1): "correct"}
    score = run_scores(run)
    assert [f["value"] for f in score["rules"]["sample0"]["fast_p"]][0] == pytest.approx(2 / 3)
    assert [f["value"] for f in score["rules"]["best"]["fast_p"]][0] == 1
    assert score["pass_at_k"][0]["value"] == pytest.approx((0.5 + 0.5 + 1) / 3)
    # KernelBench's rule from the same stored verdicts: the wrong SiLU's error is past atol (undecided
    # without |reference|), the partial replacement never ran without library calls (undecided).
    kb = run_scores(run, mode="KernelBench")
    assert (kb["rules"]["sample0"]["correct"], kb["rules"]["best"]["correct"], kb["flags"]["undecided"]) == (2, 3, 2)
    assert all(v > 0 for v in kb["rules"]["best"]["speedups"]) and len(kb["rules"]["best"]["speedups"]) == 3

    call_command("export_run", "model_x", str(folder.parent / "export"), stdout=io.StringIO())
    got = kernelbench.analyze_greedy_eval(
        {1: {n: name for n, (name, _) in FILES.items()}}, run_name="export", hardware="-", baseline="-", level=1,
        eval_results_dir=str(folder.parent), baseline_file=str(folder.parent / "export" /
                                                                "baseline_time_kernellab_eager.json"))
    page = {f"{f['p']}": f["value"] for f in score["rules"]["sample0"]["fast_p"]}
    assert got["fast_p"] == pytest.approx({str(p): page[str(p)] for p in scoring.THRESHOLDS})
    assert got["correct_count"] == 2

    # The KernelBench mode's export agrees with the page's KernelBench numbers the same way.
    call_command("export_run", "model_x", str(folder.parent / "export_kb"), "--mode", "KernelBench",
                 stdout=io.StringIO())
    got = kernelbench.analyze_greedy_eval(
        {1: {n: name for n, (name, _) in FILES.items()}}, run_name="export_kb", hardware="-", baseline="-", level=1,
        eval_results_dir=str(folder.parent), baseline_file=str(folder.parent / "export_kb" /
                                                                "baseline_time_kernellab_eager.json"))
    page = {f"{f['p']}": f["value"] for f in kb["rules"]["sample0"]["fast_p"]}
    assert got["fast_p"] == pytest.approx({str(p): page[str(p)] for p in scoring.THRESHOLDS})
    assert got["geo_mean_speedup"] == pytest.approx(kb["rules"]["sample0"]["geomean"])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_judged_by_kernelbenchs_rule_uses_the_runners_verdicts(monkeypatch, tmp_path):
    """The same two files as two runs, one per rule, through the real worker and runner: a SiLU 3e-3 off
    (within KernelBench's 1e-2, outside KernelLab's 1e-4) and one 0.5 off (outside both)."""
    from tests.runner.test_rules import FAR_SILU, NEAR_SILU

    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELLAB_BASELINE_COMPILE", "0")
    services.suite_import(user=None, suite_name="KB", files=[("level1/2_SiLU.py", sources.SILU_PROBLEM.encode())],
                          device="cpu")
    folder = tmp_path / "model_y"
    folder.mkdir()
    (folder / "level_1_problem_2_sample_0_kernel.py").write_text(NEAR_SILU)
    (folder / "level_1_problem_2_sample_1_kernel.py").write_text(FAR_SILU)
    call_command("rejudge", str(folder), "--suite", "KB", "--name", "by KernelLab", stdout=io.StringIO())
    call_command("rejudge", str(folder), "--suite", "KB", "--name", "by KernelBench", "--mode", "kernelbench",
                 stdout=io.StringIO())
    worker = EvaluationWorker(name="rule-cpu", device="cpu", pool_size=0, rekick_seconds=0, jobs_in_flight=1)
    assert worker.run(once=True) == 4

    kernellab, kernelbench_run = Run.objects.get(name="by KernelLab"), Run.objects.get(name="by KernelBench")
    assert (kernellab.rule, kernelbench_run.rule) == ("kernellab", "kernelbench")

    def kernels(run):
        return {e.sample: Kernel.objects.get(pk=e.kernel_id) for e in run.entries.all()}

    by_kernellab, by_kernelbench = kernels(kernellab), kernels(kernelbench_run)
    assert [by_kernellab[s].status for s in (0, 1)] == ["incorrect", "incorrect"]
    assert [by_kernelbench[s].status for s in (0, 1)] == ["correct", "incorrect"]
    assert by_kernelbench[0].jobs.get().options == {"rule": "kernelbench"}
    near = by_kernelbench[0]  # correct by another rule: kept and shown, never in KernelLab's rankings
    assert near.quarantined and near.runs.get().quarantine_reason.startswith("judged by kernelbench's rule (v0.1)")

    # KernelBench's mode: the KernelBench run's numbers are the runner's verdicts ...
    scored = run_scores(kernelbench_run, mode="KernelBench")
    assert scored["rules"]["sample0"]["correct"] == 1 and scored["rules"]["best"]["correct"] == 1
    assert scored["sources"] == {"runner": 2, "derived": 0} and scored["flags"]["undecided"] == 0
    speedup = scored["rows"][0]["samples"][0]["speedup"]
    result = near.runs.get().result
    assert speedup == pytest.approx(result["kernelbench"]["eager_mean_ms"] / result["timing"]["mean_ms"])
    # ... and KernelLab's mode counts none of them (no kernel of the run has a KernelLab verdict)
    assert run_scores(kernelbench_run)["rules"]["best"]["correct"] == 0
    # The KernelLab run under KernelBench's mode: read off KernelLab's verdicts (max. abs. error 3e-3
    # within atol: correct; 0.5 over it: undecided without |reference|)
    derived = run_scores(kernellab, mode="KernelBench")
    assert derived["sources"] == {"runner": 0, "derived": 2}
    assert derived["rules"]["sample0"]["correct"] == 1 and derived["flags"]["undecided"] == 1
