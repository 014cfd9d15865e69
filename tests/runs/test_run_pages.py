"""Run pages and the run_scores command: every number labelled with mode, rule and baseline; two
runs of one suite side by side with their fast_p curves and speedup spread drawn on the server."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from .test_runs import FILES, rejudged, suite  # noqa: F401 (the suite fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_in(client):
    client.force_login(get_user_model().objects.create_user("ada", password="pw-for-tests-only"))
    return client


def test_a_suite_with_no_run_shows_no_run_score(client_in, suite):  # noqa: F811
    page = client_in.get(reverse("suite_runs", args=[suite.code])).content.decode()
    assert "No run on this suite yet, so no run score" in page


def test_the_run_page_names_mode_rule_and_baseline_on_every_number(client_in, suite):  # noqa: F811
    run = rejudged(suite, "A")
    page = client_in.get(reverse("run_detail", args=[run.code]) + "?baseline=eager").content.decode()
    assert "KernelLab · sample 0" in page and "KernelLab · best of N" in page and "speedup vs eager" in page
    assert 'title="fast_1, KernelLab, sample 0, vs eager">0.333<' in page
    assert "pass@1 0.667" in page and "pass@2 1.000" in page
    assert page.count('class="run-line ') == 1
    assert "KernelBench · sample 0" in page and "the stored verdicts cannot decide" in page


def test_two_runs_compare_side_by_side_with_curves_and_spread(client_in, suite):  # noqa: F811
    a = rejudged(suite, "A")
    b = rejudged(suite, "B", {(p, 0): ("correct", 1.1 * p, 1.0) for p in FILES})
    url = reverse("run_compare") + f"?runs={a.code}&runs={b.code}"
    page = client_in.get(url).content.decode()
    curves = re.search(r'<div class="run-curves">(.*?)</div>', page, re.S).group(1)
    assert curves.count('class="run-line ') == 2
    spread = re.search(r'<div class="run-spread">(.*?)</div>', page, re.S).group(1)
    assert spread.count('class="kernel-dot ') == 3 + 3  # each run's best-of-N speedup per correct problem
    assert "run 1: A" in page and "run 2: B" in page
    assert client_in.get(reverse("run_compare") + f"?runs={a.code}").status_code == 400


def test_run_scores_prints_the_runs_side_by_side(suite):  # noqa: F811
    rejudged(suite, "A")
    rejudged(suite, "B", {(p, 0): ("incorrect", None, None) for p in FILES})
    out = io.StringIO()
    call_command("run_scores", "A", "B", stdout=out)
    text = out.getvalue()
    assert "Suite “S”, mode KernelLab, speedup vs eager" in text
    assert re.search(r"A: 3 problems.*\n.*fast_0 .*\n  sample 0 +0\.667 +0\.667 +0\.333", text)
    assert "pass@1 0.667, pass@2 1.000" in text
    with pytest.raises(CommandError, match="no run named"):
        call_command("run_scores", "nope", stdout=io.StringIO())


def test_search_every_problem_starts_one_run_that_owns_the_searches(client):
    from searches.models import Search, Suite, SuiteProblem
    from tests.searches import dashboard_data as d
    from tests.searches.problem_samples import SOFTMAX

    from runs.models import Run

    mini = Suite.objects.create(name="L1 mini")
    for n in (1, 2):
        problem = d.problem(name=f"Softmax {n}", source=f"# {n}\n" + SOFTMAX, family="softmax", device="cpu")
        SuiteProblem.objects.create(suite=mini, problem=problem, level=1, number=n)
    client.force_login(d.user())
    form = dict(proposer="playbook", device="cpu", rounds=2, parents_per_round=1, ideas_per_parent=1,
                kernels_per_idea=1, bank_size=0, max_candidates=4, name="playbook r2")
    html = client.post(reverse("run_start", args=[mini.code]), form).content.decode()
    run = Run.objects.get()
    assert (run.name, run.source, run.proposer, run.shape["rounds"]) == ("playbook r2", "search", "playbook", 2)
    assert set(run.run_searches.values_list("search_id", flat=True)) == set(Search.objects.values_list("id", flat=True))
    assert f'Run <a href="{reverse("run_detail", args=[run.code])}">playbook r2</a> started.' in html
    assert client.post(reverse("run_start", args=[mini.code]), form).status_code == 200  # refused: name taken
    assert Run.objects.count() == 1


def test_a_zipped_runs_folder_uploaded_on_the_suite_becomes_one_run(client_in, suite):  # noqa: F811
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    from runs.models import Run

    from .test_runs import SOLUTION

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model_x/level_1_problem_2_sample_1_kernel.py", SOLUTION)
        archive.writestr("model_x/level_1_problem_9_sample_0_kernel.py", SOLUTION)
    upload = SimpleUploadedFile("model_x.zip", buffer.getvalue(), content_type="application/zip")
    response = client_in.post(reverse("suite_rejudge", args=[suite.code]),
                              {"name": "model x", "archive": upload, "allow_library": "on"}, follow=True)
    run = Run.objects.get(name="model x")
    entry = run.entries.get()
    assert (run.allow_library, run.samples, entry.sample, entry.member.number) == (True, 2, 1, 2)
    page = response.content.decode()
    assert "1 of 2 files queued as run “model x”." in page
    assert "no problem of the suite has level 1 and number 9" in page
    assert run.entries.get().kernel.jobs.get().options == {"allow_library": True}


def test_start_run_starts_a_configuration_on_a_suite_from_the_command_line():
    from searches.models import Suite, SuiteProblem
    from tests.searches import dashboard_data as d
    from tests.searches.problem_samples import SOFTMAX

    from runs.models import Run

    mini = Suite.objects.create(name="L1 mini")
    for n in (1, 2):
        problem = d.problem(name=f"Softmax {n}", source=f"# {n}\n" + SOFTMAX, family="softmax", device="cpu")
        SuiteProblem.objects.create(suite=mini, problem=problem, level=1, number=n)
    out = io.StringIO()
    call_command("start_run", "proposer=playbook", "rounds=2", "max_candidates=4", "--suite", "L1 mini",
                 "--name", "playbook R2", stdout=out)
    run = Run.objects.get()
    assert "searches started" in out.getvalue() and "2 searches started, 0 refused" in out.getvalue()
    assert (run.proposer, run.shape["rounds"], run.shape["max_candidates"], run.run_searches.count()) == (
        "playbook", 2, 4, 2)
    with pytest.raises(CommandError, match="rounds"):
        call_command("start_run", "rounds=0", "--suite", "L1 mini", "--name", "x", stdout=io.StringIO())


def test_the_suites_zip_upload_takes_kernelbenchs_rule(client_in, suite):  # noqa: F811
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    from runs.models import Run

    from .test_runs import SOLUTION

    suite_page = client_in.get(reverse("suite_detail", args=[suite.code])).content.decode()
    assert f'href="{reverse("suite_runs", args=[suite.code])}#rejudge-form"' in suite_page
    page = client_in.get(reverse("suite_runs", args=[suite.code])).content.decode()
    assert 'id="rejudge-form"' in page and 'name="rule"' in page and "KernelBench v0.1" in page
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("level_1_problem_2_sample_0_kernel.py", SOLUTION)
    upload = SimpleUploadedFile("kb.zip", buffer.getvalue(), content_type="application/zip")
    response = client_in.post(reverse("suite_rejudge", args=[suite.code]),
                              {"name": "kb rule", "archive": upload, "rule": "kernelbench"}, follow=True)
    run = Run.objects.get(name="kb rule")
    assert run.rule == "kernelbench"
    assert run.entries.get().kernel.jobs.get().options == {"rule": "kernelbench"}
    assert "judged by KernelBench v0.1" in response.content.decode()


def test_a_runs_own_baselines_reach_the_runner_and_its_page(client_in, suite):  # noqa: F811
    """Chosen per run; the verdicts' speedups against them (the runner's, recorded by the real service)
    score the run, and a baseline the runner skipped says why rather than counting as slower."""
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    from evaluation import leases
    from runs.models import Run
    from runs.selectors import run_scores
    from searches import services

    from .test_runs import SOLUTION

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("level_1_problem_1_sample_0_kernel.py", SOLUTION)
    upload = SimpleUploadedFile("b.zip", buffer.getvalue(), content_type="application/zip")
    client_in.post(reverse("suite_rejudge", args=[suite.code]),
                   {"name": "graphs", "archive": upload, "baselines": ["cudagraph", "max-autotune"]})
    run = Run.objects.get(name="graphs")
    assert run.baselines == ["max-autotune", "cudagraph"]
    kernel = run.entries.get().kernel
    assert kernel.jobs.get().options == {"baselines": ["max-autotune", "cudagraph"]}
    more = {"max-autotune": {"ms": 3.0, "mean_ms": 3.1, "skipped": None},
            "cudagraph": {"ms": None, "mean_ms": None, "skipped": "CUDA graphs need a CUDA device"}}
    services.kernel_record_verdict(kernel=kernel, job=leases.claim("w", "cpu"), result={
        "schema": 1, "status": "correct", "reason": "", "quarantined": False, "seed": 1,
        "timing": {"median_ms": 2.0, "mean_ms": 2.1}, "speedup_vs_eager": 1.1, "speedup_vs_compile": None,
        "baseline": {"eager_ms": 2.2, "compile_ms": None, "compile_mode": None, "more": more},
        "speedup_vs_more": {"max-autotune": 1.5, "cudagraph": None}, "environment": {"device_name": "test-cpu"}})
    autotune = run_scores(run, "max-autotune")
    assert autotune["baseline"] == "max-autotune" and autotune["rows"][0]["best"] == (True, 1.5)
    assert autotune["skipped"] == []
    graphs = run_scores(run, "cudagraph")
    assert graphs["rows"][0]["best"] == (True, None) and graphs["skipped"] == ["CUDA graphs need a CUDA device"]
    assert run_scores(run, "reduce-overhead")["baseline"] == "eager"  # not one of this run's baselines
    page = client_in.get(reverse("run_detail", args=[run.code]) + "?baseline=cudagraph").content.decode()
    assert "?baseline=max-autotune" in page and "Not timed against cudagraph for some kernels" in page


def test_kernelbenchs_published_baselines_match_problems_by_source_and_name_their_gpu(client_in, tmp_path):
    """KernelBench's H100 timing files (fixture, its commit) loaded by the command: a problem imported from
    KernelBench's own file gets its times, shown with the GPU named; a problem whose file has the same name
    but another source gets none."""
    import json
    from pathlib import Path

    from runs.models import PublishedBaseline
    from searches import services

    kernelbench = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
    relu = (kernelbench / "level1" / "19_ReLU.py").read_bytes()
    suite_ = services.suite_import(user=None, suite_name="L1", device="cpu", files=[
        ("level1/19_ReLU.py", relu), ("level1/20_LeakyReLU.py", b"# edited\n" + (kernelbench / "level1" / "20_LeakyReLU.py").read_bytes())]).suite
    timing = kernelbench / "results" / "timing" / "H100_Modal"
    out = io.StringIO()
    call_command("load_published_baselines", str(timing / "baseline_time_torch.json"),
                 str(timing / "baseline_time_torch_compile_inductor_default.json"), "--problems", str(kernelbench),
                 stdout=out)
    assert "baseline_time_torch.json (KernelBench H100_Modal): 1 files matched 1 problems by source" in out.getvalue()
    published = json.loads((timing / "baseline_time_torch.json").read_text())["level1"]["19_ReLU.py"]
    eager = PublishedBaseline.objects.get(config="eager")
    relu_problem = suite_.members.get(number=19).problem
    assert (eager.problem, eager.mean_ms, eager.gpu) == (relu_problem, published["mean"], published["hardware"])
    assert not PublishedBaseline.objects.filter(problem=suite_.members.get(number=20).problem)  # same name, other source
    assert PublishedBaseline.objects.count() == 2  # eager and compile, ReLU only

    from runs.services import run_rejudge

    run, _ = run_rejudge(user=None, suite=suite_, files=[("level_1_problem_19_sample_0_kernel.py",
                                                         relu.replace(b"class Model(", b"class ModelNew("))], name="r")
    page = client_in.get(reverse("run_detail", args=[run.code])).content.decode()
    assert "published elsewhere (their GPU, not this host's)" in page
    assert f"KernelBench H100_Modal · eager {published['mean']:.3f} ms (mean) on {published['hardware']}" in page
