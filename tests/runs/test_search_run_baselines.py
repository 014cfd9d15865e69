"""A search run with extra baselines: `start_run baselines=...` (checked in the re-judge's words) asks
every search for them and keeps them on the run, so the run scores against them in both modes, on its
page and in `run_scores` (one mode and baseline, or `--every` of them, as text or JSON)."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluation import leases
from runs.models import Run
from runs.selectors import run_scores
from searches import services
from searches.models import Search, Suite, SuiteProblem
from tests.searches import dashboard_data as d
from tests.searches.problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db

# what the runner answers with max-autotune timed and CUDA graphs skipped (a CPU worker)
MORE = {"max-autotune": {"ms": 3.0, "mean_ms": 3.3, "skipped": None},
        "cudagraph": {"ms": None, "mean_ms": None, "skipped": "CUDA graphs need a CUDA device"}}


@pytest.fixture
def mini():
    suite = Suite.objects.create(name="L1 mini")
    for n in (1, 2):
        problem = d.problem(name=f"Softmax {n}", source=f"# {n}\n" + SOFTMAX, family="softmax", device="cpu")
        SuiteProblem.objects.create(suite=suite, problem=problem, level=1, number=n)
    return suite


def start_run(*knobs, name="graphs"):
    call_command("start_run", "proposer=playbook", "rounds=1", *knobs, "--suite", "L1 mini", "--name", name,
                 stdout=io.StringIO())
    return Run.objects.get(name=name)


def judge_first(search, *, median=2.0, mean=2.2):
    """The search's first candidate judged correct, through the real service, with the extra baselines."""
    kernel = services.kernel_submit(user=None, problem=search.problem, source=SOFTMAX.replace("class Model(",
                                                                                              "class ModelNew("),
                                    search=search)
    job = leases.claim("w", "cpu")
    assert job.kernel_id == kernel.pk and job.options["baselines"] == search.baselines
    services.kernel_record_verdict(kernel=kernel, job=job, result={
        "schema": 1, "status": "correct", "reason": "", "quarantined": False, "seed": 1,
        "timing": {"median_ms": median, "mean_ms": mean}, "speedup_vs_eager": 4.0 / median,
        "speedup_vs_compile": 5.0 / median,
        "baseline": {"eager_ms": 4.0, "eager_mean_ms": 4.4, "compile_ms": 5.0, "compile_mode": "default", "more": MORE},
        "speedup_vs_more": {"max-autotune": MORE["max-autotune"]["ms"] / median, "cudagraph": None},
        "environment": {"device_name": "test-cpu"}})
    return kernel


def test_start_run_asks_every_search_for_the_baselines_and_the_run_keeps_them(mini):
    run = start_run("baselines=cudagraph,max-autotune")
    assert run.baselines == ["max-autotune", "cudagraph"]  # the runner's order
    searches = Search.objects.filter(run_entries__run=run)
    assert searches.count() == 2 and {tuple(s.baselines) for s in searches} == {("max-autotune", "cudagraph")}
    assert all(s.job_options()["baselines"] == ["max-autotune", "cudagraph"] for s in searches)
    with pytest.raises(CommandError, match="baselines: Baselines are among reduce-overhead, max-autotune, cudagraph"):
        start_run("baselines=cudagraph,warp-speed", name="bad")
    assert start_run(name="plain").baselines == []
    assert not Run.objects.filter(name="bad").exists()


def test_the_service_refuses_unknown_baselines_in_the_rejudges_words(mini):
    from django.core.exceptions import ValidationError

    from runs.services import run_rejudge, run_start_searches

    for start in (lambda: run_start_searches(user=None, suite=mini, name="x", proposer="playbook", device="cpu",
                                             baselines=["warp-speed"]),
                  lambda: run_rejudge(user=None, suite=mini, files=[], name="y", baselines=["warp-speed"])):
        with pytest.raises(ValidationError) as refused:
            start()
        assert refused.value.messages == ["Baselines are among reduce-overhead, max-autotune, cudagraph."]
    assert not Run.objects.exists()


def test_a_search_run_scores_against_its_baselines_in_both_modes(mini, client):
    run = start_run("baselines=max-autotune,cudagraph")
    first = Search.objects.filter(run_entries__run=run).order_by("id").first()
    judge_first(first)
    autotune = run_scores(run, "max-autotune")
    assert autotune["baseline"] == "max-autotune" and autotune["rows"][0]["best"] == (True, pytest.approx(1.5))
    assert autotune["rows"][1]["best"] == (False, None)  # a problem with no correct kernel yet
    # KernelBench's statistic from a KernelLab verdict: the kernel's mean, the baseline read as eager is (median)
    kb = run_scores(run, "max-autotune", "KernelBench")
    assert kb["baseline"] == "max-autotune" and kb["rows"][0]["best"] == (True, pytest.approx(3.0 / 2.2))
    assert run_scores(run, "compile", "KernelBench")["rows"][0]["best"] == (True, pytest.approx(5.0 / 2.2))
    graphs = run_scores(run, "cudagraph", "KernelBench")
    assert graphs["rows"][0]["best"] == (True, None) and graphs["skipped"] == ["CUDA graphs need a CUDA device"]
    assert [f["value"] for f in graphs["rules"]["best"]["fast_p"]][:2] == [0.5, 0.0]  # correct, never faster

    client.force_login(d.user())
    page = client.get(reverse("run_detail", args=[run.code]) + "?baseline=max-autotune").content.decode()
    assert "KernelBench · speedup vs max-autotune" in page and "times: kernel mean over max-autotune's median" in page


def test_run_scores_every_mode_and_baseline_as_a_table_and_as_json(mini):
    run = start_run("baselines=max-autotune,cudagraph")
    judge_first(Search.objects.filter(run_entries__run=run).order_by("id").first())
    out = io.StringIO()
    call_command("run_scores", "graphs", "--every", stdout=out)
    text = out.getvalue()
    assert "fast_0.5" in text and "fast_2" in text
    for mode in ("KernelLab", "KernelBench"):
        for baseline in ("eager", "compile", "max-autotune", "cudagraph"):
            assert f"  {mode:<12} {baseline:<16} best of N" in text, (mode, baseline)
    assert "cudagraph        not timed for some kernels: CUDA graphs need a CUDA device" in text

    out = io.StringIO()
    call_command("run_scores", "graphs", "--every", "--json", stdout=out)
    [data] = json.loads(out.getvalue())["runs"]
    assert data["baselines"] == ["eager", "compile", "max-autotune", "cudagraph"]
    scores = {(s["mode"], s["baseline"]): s for s in data["scores"]}
    assert len(scores) == 8
    best = scores[("KernelLab", "max-autotune")]["rules"]["best"]
    assert list(best["fast_p"]) == ["fast_0", "fast_0.5", "fast_0.8", "fast_1", "fast_1.5", "fast_2"]
    assert (best["fast_p"]["fast_1"], best["fast_p"]["fast_1.5"], best["correct"]) == (0.5, 0.0, 1)
    assert scores[("KernelBench", "eager")]["per_problem"][0]["best"] == {"correct": True,
                                                                          "speedup": pytest.approx(4.0 / 2.2)}  # eager: its median, as ever


def test_kernelbenchs_statistic_reads_another_baseline_as_it_reads_eager():
    from runs import kernelbench_mode

    base = {"eager_ms": 4.0, "eager_mean_ms": 4.4, "compile_ms": 5.0, "more": MORE}
    kernellab = {"timing": {"median_ms": 2.0, "mean_ms": 2.2}, "baseline": base}
    judged = {**kernellab, "rule": {"name": "kernelbench", "version": "v0.1"}}
    assert kernelbench_mode.speedup_vs(kernellab, "max-autotune") == pytest.approx(3.0 / 2.2)  # median, as eager
    assert kernelbench_mode.speedup_vs(judged, "max-autotune") == pytest.approx(3.3 / 2.2)  # mean over mean
    assert kernelbench_mode.speedup_vs(judged, "compile") == pytest.approx(5.0 / 2.2)  # no mean kept
    assert kernelbench_mode.speedup_vs(judged, "cudagraph") is None  # skipped
    assert kernelbench_mode.speedup_vs(None, "compile") is None
