"""The scheduling policy (evaluation/scheduling.py) through the views and services: a person
at their cap of queued jobs or active searches is refused with the count (a 429 page) and nothing
new is queued, while someone else is unaffected; the rate-limit page says what is queued too.
The claim order of the priority classes is in tests/evaluation/test_leases.py."""

import pytest
from django.urls import reverse

from evaluation import queue
from evaluation.models import EvaluationJob
from evaluation.scheduling import Priority
from lib import ratelimit
from lib.ratelimit import OverQuota
from searches import services
from searches.models import Kernel, Problem, Search
from tests.searches import dashboard_data as d

from .problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db

KERNEL = SOFTMAX.replace("class Model(", "class ModelNew(")
KNOBS = dict(proposer="playbook", device="cpu", rounds=2, parents_per_round=1, ideas_per_parent=1,
             kernels_per_idea=1, bank_size=0, max_candidates=4)


@pytest.fixture
def problem():
    return d.problem(name="Softmax", source=SOFTMAX, family="softmax", device="cpu")


def submit(client, problem, n):
    return client.post(reverse("problem_kernel_new", args=[problem.code]), {"name": f"k{n}", "source": KERNEL})


def test_a_person_at_the_job_cap_gets_a_429_with_the_count_and_nothing_is_queued(client, problem, settings):
    settings.MAX_QUEUED_JOBS_PER_USER = 2
    ada, bob = d.user("ada"), d.user("bob")
    client.force_login(ada)
    assert [submit(client, problem, n).status_code for n in (1, 2)] == [302, 302]
    jobs = EvaluationJob.objects.filter(requested_by=ada)
    assert set(jobs.values_list("priority", flat=True)) == {Priority.INTERACTIVE}

    refused = submit(client, problem, 3)
    page = refused.content.decode()
    assert refused.status_code == 429 and refused["Retry-After"]
    assert "You have 2 evaluation jobs queued or running; the cap is 2 per person." in page
    assert (Kernel.objects.count(), jobs.count()) == (2, 2)  # the refused kernel was not saved either

    client.force_login(bob)
    assert submit(client, problem, 4).status_code == 302
    assert EvaluationJob.objects.filter(requested_by=bob).count() == 1

    jobs.filter(pk=jobs.first().pk).update(status=EvaluationJob.Status.DONE)  # a finished job frees its place
    client.force_login(ada)
    assert submit(client, problem, 5).status_code == 302


def test_a_new_problem_over_the_cap_is_refused_and_not_saved(client, problem, settings):
    settings.MAX_QUEUED_JOBS_PER_USER = 1
    client.force_login(d.user("ada"))
    assert submit(client, problem, 1).status_code == 302
    response = client.post(reverse("problem_create"), {"name": "Another", "source": SOFTMAX + "\n", "device": "cpu"})
    assert response.status_code == 429 and "the cap is 1 per person" in response.content.decode()
    assert not Problem.objects.filter(name="Another").exists()


def test_the_rate_limit_page_says_how_much_is_queued(client, problem, monkeypatch):
    monkeypatch.setattr(ratelimit, "SANDBOX_WORK", ratelimit.Limit("work", 1, 60, "requests that start work"))
    client.force_login(d.user("ada"))
    assert submit(client, problem, 1).status_code == 302
    response = submit(client, problem, 2)
    page = " ".join(response.content.decode().split())
    assert response.status_code == 429 and "Too many requests that start work" in page
    assert "You have 1 evaluation job queued or running (the cap is 100)" in page


def test_the_search_cap_counts_queued_and_running_searches_not_paused_or_finished(problem, settings):
    settings.MAX_ACTIVE_SEARCHES_PER_USER = 1
    ada = d.user("ada")
    first = services.search_start(problem=problem, user=ada, **KNOBS)
    with pytest.raises(OverQuota, match="You have 1 search queued or running; the cap is 1 per person"):
        services.search_start(problem=problem, user=ada, **KNOBS)
    best = d.kernel(problem=problem, search=first, source=KERNEL)
    with pytest.raises(OverQuota):
        services.search_fork(search=first, user=ada, from_kernel=best)  # a fork is a search too
    assert Search.objects.filter(created_by=ada).count() == 1
    services.search_start(problem=problem, user=d.user("bob"), **KNOBS)  # another person's cap is their own
    services.search_start(problem=problem, user=None, **KNOBS)  # the system has none

    services.search_pause(search=first, user=ada)
    second = services.search_start(problem=problem, user=ada, **KNOBS)
    with pytest.raises(Exception, match="the cap is 1 per person"):
        services.search_resume(search=first, user=ada)  # resuming would make two
    services.search_cancel(search=second, user=ada)
    assert services.search_resume(search=first, user=ada).status == Search.Status.RUNNING


def test_the_search_page_answers_429_at_the_search_cap(client, problem, settings):
    settings.MAX_ACTIVE_SEARCHES_PER_USER = 1
    ada = d.user("ada")
    services.search_start(problem=problem, user=ada, **KNOBS)
    client.force_login(ada)
    response = client.post(reverse("search_new", args=[problem.code]), KNOBS)
    page = " ".join(response.content.decode().split())
    assert response.status_code == 429 and "You have 1 search queued or running; the cap is 1" in page
    assert Search.objects.count() == 1


def test_the_engine_and_the_system_queue_without_a_cap(problem, settings):
    settings.MAX_QUEUED_JOBS_PER_USER = 0
    search = d.search(problem=problem)
    kernel = d.kernel(problem=problem, search=search, status="pending", run=False)
    job = queue.enqueue_kernel(kernel)  # the engine's candidate: search class, nobody's cap
    assert (job.priority, job.requested_by) == (Priority.SEARCH, None)
    assert services.problem_request_validation(problem=problem, user=None).priority == Priority.INTERACTIVE
