"""Problem pages: login required, list, detail, create (paste and upload), edit, 404s."""

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation import leases
from evaluation.models import EvaluationJob
from searches import services
from searches.models import Problem, Search

from . import dashboard_data as d
from .problem_samples import MISSING_GET_INPUTS, SOFTMAX, SYNTAX_ERROR, two_megabytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def user():
    return get_user_model().objects.create_user("ada", password="pw-for-tests-only")


@pytest.fixture
def client_in(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def problem(user):
    return services.problem_create(user=user, name="Softmax", source=SOFTMAX)


def record_ok(problem):
    job = leases.claim("w1", problem.device)
    services.problem_record_validation(problem=problem, job=job, result={
        "schema": 1, "status": "ok", "reason": "", "outputs": [{"shape": [16, 256], "dtype": "float32"}],
        "family": "softmax", "flops": 2.0e4, "min_bytes": 3.3e4,
        "baseline": {"eager_ms": 0.0412, "compile_ms": 1.25, "compile_mode": "default"},
        "environment": {"device_name": "Test CPU", "torch": "2.13.0", "python": "3.11"},
    })


def test_every_problem_page_needs_a_login(client, problem):
    pages = [
        reverse("problem_list"),
        reverse("problem_create"),
        reverse("problem_detail", args=[problem.code]),
        reverse("problem_edit", args=[problem.code]),
        reverse("problem_validation_status", args=[problem.code]),
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/?next="), url
    response = client.post(reverse("problem_revalidate", args=[problem.code]))
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_login_page_logs_in(client, user):
    response = client.post(reverse("login"), {"username": "ada", "password": "pw-for-tests-only"})
    assert response.status_code == 302
    assert client.get(reverse("problem_list")).status_code == 200


def test_unknown_problem_is_404(client_in):
    code = uuid.uuid4()
    for name in ("problem_detail", "problem_edit", "problem_validation_status"):
        assert client_in.get(reverse(name, args=[code])).status_code == 404


def test_list_shows_latest_versions_with_status_baselines_and_search_counts(client_in, problem, user):
    record_ok(problem)
    Search.objects.create(problem=problem)
    v2 = services.problem_update(problem=problem, user=user, description="second")
    Search.objects.create(problem=v2)
    Search.objects.create(problem=v2)
    page = client_in.get(reverse("problem_list")).content.decode()
    assert page.count("Softmax</a>") == 1  # only the latest version is listed
    assert "v2" in page and '<span class="badge ok"' in page
    assert "0.0412 ms" in page and "1.25 ms" in page
    assert 'title="Its searches, every version">3</a></td>' in page  # searches over every version
    listed = client_in.get(reverse("search_list"), {"problem": v2.code, "versions": "all"}).content.decode()
    assert listed.count('<span class="badge queued">') == 3  # the count's link lists the same three


def test_detail_shows_the_validation_result_and_highlighted_source(client_in, problem):
    record_ok(problem)
    page = client_in.get(reverse("problem_detail", args=[problem.code])).content.decode()
    assert "float32</code> of shape <code>(16, 256)</code>" in page
    assert "0.0412 ms" in page and "1.25 ms" in page and "Test CPU" in page
    assert "20 kFLOP" in page and "33 kB" in page
    assert 'class="highlighttable"' in page and 'id="L-1"' in page
    assert '<span class="k">class</span>' in page  # tokens are highlighted on the server


def test_detail_while_pending_says_queued_and_follows_it(client_in, problem):
    page = client_in.get(reverse("problem_detail", args=[problem.code])).content.decode()
    assert "Queued for validation" in page and 'data-pending="true"' in page
    assert page.count("Queued for validation</span>") == 2  # the page's badge and its row in the versions table
    assert "problem_validation.js" in page
    state = client_in.get(reverse("problem_validation_status", args=[problem.code])).json()
    assert state["pending"] is True and state["status"] == "queued"
    record_ok(problem)
    state = client_in.get(reverse("problem_validation_status", args=[problem.code])).json()
    assert state["pending"] is False and state["status"] == "ok"


def test_cuda_problem_says_it_waits_for_a_cuda_worker(client_in, user):
    problem = services.problem_create(user=user, name="GPU softmax", source=SOFTMAX, device="cuda")
    page = client_in.get(reverse("problem_detail", args=[problem.code])).content.decode()
    assert "Waiting for a CUDA worker" in page
    assert "RUNNER_DEVICE=cuda python manage.py evaluator" in page


def test_detail_of_an_invalid_problem_shows_the_precise_reason(client_in, problem):
    job = leases.claim("w1", "cpu")
    services.problem_record_validation(problem=problem, job=job, result={
        "schema": 1, "status": "invalid", "reason": "Model.forward raised RuntimeError: reference exploded <here>",
        "outputs": [], "family": None, "flops": None, "min_bytes": None, "baseline": None, "environment": {},
    })
    page = client_in.get(reverse("problem_detail", args=[problem.code])).content.decode()
    assert "The reference does not run as a problem." in page
    assert "Model.forward raised RuntimeError: reference exploded &lt;here&gt;" in page


def test_create_by_paste_redirects_to_the_new_problem(client_in):
    response = client_in.post(reverse("problem_create"), {"name": "Softmax", "source": SOFTMAX, "device": "cpu"})
    problem = Problem.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("problem_detail", args=[problem.code])
    assert problem.created_by.username == "ada"
    assert EvaluationJob.objects.filter(problem=problem, purpose="validate").exists()


def test_create_by_upload(client_in):
    upload = SimpleUploadedFile("23_Softmax.py", SOFTMAX.encode(), content_type="text/x-python")
    response = client_in.post(reverse("problem_create"), {"source_file": upload, "device": "cpu", "rtol": "0.001"})
    assert response.status_code == 302
    problem = Problem.objects.get()
    assert (problem.name, problem.source, problem.rtol) == ("23 Softmax", SOFTMAX, 0.001)


@pytest.mark.slow
@pytest.mark.parametrize(
    "source, message",
    [
        (SYNTAX_ERROR, "Syntax error on line 6, column"),
        (MISSING_GET_INPUTS, "The source does not define get_inputs."),
        (two_megabytes(), "The source is 2.0 MB; the limit is 195 KB."),
        # 100 KB of unary minus: CPython's parser raises MemoryError; a long `+` chain, RecursionError.
        ("x = " + "-" * 100_000 + "1\n", "nested too deeply for Python to parse"),
        ("x = " + "+".join(["1"] * 50_000) + "\n", "nested too deeply for Python to parse"),
    ],
)
def test_create_with_bad_source_shows_the_error_and_keeps_the_input(client_in, source, message):
    response = client_in.post(reverse("problem_create"), {"name": "Broken one", "source": source, "device": "cpu"})
    page = response.content.decode()
    assert response.status_code == 200 and message in page
    assert 'value="Broken one"' in page  # nothing typed is lost
    assert not Problem.objects.exists()


def test_edit_page_warns_and_saves_a_new_version_when_the_problem_has_results(client_in, problem):
    Search.objects.create(problem=problem)
    page = client_in.get(reverse("problem_edit", args=[problem.code])).content.decode()
    assert "Saving makes version 2; version 1" in page
    data = {"name": "Softmax", "source": SOFTMAX.replace("256", "512"), "device": "cpu"}
    response = client_in.post(reverse("problem_edit", args=[problem.code]), data)
    new = Problem.objects.get(version=2)
    assert response["Location"] == reverse("problem_detail", args=[new.code])
    old_page = client_in.get(reverse("problem_detail", args=[problem.code])).content.decode()
    assert "The latest is" in old_page and "version 2" in old_page
    # Editing the old version sends you to the latest.
    response = client_in.get(reverse("problem_edit", args=[problem.code]))
    assert response["Location"] == reverse("problem_edit", args=[new.code])


def test_edit_with_a_broken_source_keeps_the_problem_and_the_input(client_in, problem):
    response = client_in.post(
        reverse("problem_edit", args=[problem.code]), {"name": "Softmax", "source": SYNTAX_ERROR, "device": "cpu"}
    )
    assert "Syntax error on line 6" in response.content.decode()
    assert "def forward(self, x)\n" in response.content.decode()
    problem.refresh_from_db()
    assert problem.source == SOFTMAX


def test_validate_again_queues_a_new_job(client_in, problem):
    services.job_fail(job=leases.claim("w1", "cpu"), reason="worker died")
    response = client_in.post(reverse("problem_revalidate", args=[problem.code]))
    assert response.status_code == 302
    assert EvaluationJob.objects.filter(problem=problem, status="queued").count() == 1
    assert client_in.get(reverse("problem_revalidate", args=[problem.code])).status_code == 405


def test_resubmitting_the_form_unchanged_keeps_the_validation(client_in, problem):
    record_ok(problem)
    # Browsers send textarea content with CRLF line ends.
    data = {"name": "Softmax", "source": SOFTMAX.replace("\n", "\r\n"), "device": "cpu"}
    client_in.post(reverse("problem_edit", args=[problem.code]), data)
    problem.refresh_from_db()
    assert problem.source == SOFTMAX and problem.validation_status == Problem.Validation.OK
    assert EvaluationJob.objects.filter(problem=problem).count() == 1


@pytest.mark.parametrize("with_results", [False, True])
def test_another_users_edit_is_refused_and_changes_nothing(client, problem, with_results):
    if with_results:
        Search.objects.create(problem=problem)
    client.force_login(get_user_model().objects.create_user("eve", password="pw-for-tests-only"))
    url = reverse("problem_edit", args=[problem.code])
    assert client.get(url).status_code == 403
    response = client.post(url, {"name": "Mine now", "source": SOFTMAX.replace("256", "512"), "device": "cpu"})
    assert response.status_code == 403
    assert list(Problem.objects.values_list("name", "source", "version")) == [("Softmax", SOFTMAX, 1)]
    assert reverse("problem_edit", args=[problem.code]) not in client.get(
        reverse("problem_detail", args=[problem.code])).content.decode()


def test_an_administrator_edits_anyones_problem_and_it_stays_its_creators(client, problem, user):
    Search.objects.create(problem=problem)
    admin = get_user_model().objects.create_user("root", password="pw-for-tests-only", is_staff=True)
    client.force_login(admin)
    data = {"name": "Softmax", "source": SOFTMAX.replace("256", "512"), "device": "cpu"}
    assert client.post(reverse("problem_edit", args=[problem.code]), data).status_code == 302
    v2 = Problem.objects.get(version=2)
    assert v2.created_by == admin  # the version records who made it
    client.force_login(user)  # the creator still edits the latest version
    data["source"] = SOFTMAX.replace("256", "1024")
    assert client.post(reverse("problem_edit", args=[v2.code]), data).status_code == 302
    assert Problem.objects.get(is_latest=True).source == data["source"]


def test_the_list_is_paginated_fifty_to_a_page(client_in):
    for n in range(120):
        d.problem(name=f"Problem {n:03d}")
    first = client_in.get(reverse("problem_list")).content.decode()
    assert first.count(">Problem ") == 50 and ">Problem 049</a>" in first and ">Problem 050</a>" not in first
    assert '<a href="?page=2" rel="next">' in first and '<a href="?page=3">3</a>' in first
    assert "1–50 of 120 problems" in first
    second = client_in.get(reverse("problem_list"), {"page": 2}).content.decode()
    assert second.count(">Problem ") == 50 and ">Problem 050</a>" in second and ">Problem 099</a>" in second
    assert '<a href="?page=1" rel="prev">' in second
    for past_the_end in ("99", "0", "-1"):  # a number out of range: the last page
        response = client_in.get(reverse("problem_list"), {"page": past_the_end})
        assert response.status_code == 200 and ">Problem 119</a>" in response.content.decode()
    for not_a_number in ("x", "", "1e9"):  # not a page number: the first page
        response = client_in.get(reverse("problem_list"), {"page": not_a_number})
        assert response.status_code == 200 and ">Problem 000</a>" in response.content.decode()
