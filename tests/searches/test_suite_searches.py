"""One search configuration started over a whole suite: a search per problem with its own
budget, refusals named per problem, one request against the rate limit."""

import re

import pytest
from django.urls import reverse

from evaluation.models import EvaluationJob
from searches import selectors, services
from searches.models import Kernel, Search, Suite, SuiteProblem
from tests.searches import dashboard_data as d

from .problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db

KNOBS = dict(proposer="playbook", device="cpu", rounds=2, parents_per_round=1, ideas_per_parent=1,
             kernels_per_idea=1, bank_size=0, max_candidates=4)


@pytest.fixture
def suite():
    suite = Suite.objects.create(name="L1 mini")
    valid = [d.problem(name=f"Softmax {n}", source=f"# {n}\n" + SOFTMAX, family="softmax", device="cpu")
             for n in (1, 2)]
    waiting = d.problem(name="Not yet validated", device="cpu")
    waiting.validation_status = "pending"
    waiting.save()
    for number, problem in enumerate([*valid, waiting], start=1):
        SuiteProblem.objects.create(suite=suite, problem=problem, level=1, number=number)
    return suite


def test_each_problem_gets_its_own_search_and_a_refusal_says_why(suite):
    user = d.user()
    rows = services.suite_start_searches(user=user, suite=suite, name="", **KNOBS)
    assert [r.outcome for r in rows] == ["started", "started", "refused"]
    assert "still being validated" in rows[2].reason
    searches = Search.objects.order_by("id")
    assert [s.problem.name for s in searches] == ["Softmax 1", "Softmax 2"]
    assert all(s.max_candidates == 4 and s.rounds == 2 and s.created_by == user for s in searches)
    assert searches[0].name == "L1 mini: Softmax 1"


def test_the_suite_page_starts_them_in_one_request(client, suite):
    client.force_login(d.user())
    page = client.get(reverse("suite_search", args=[suite.code]))
    assert page.status_code == 200 and "Start 3 searches" in page.content.decode()
    form = {k: v for k, v in KNOBS.items() if v is not None}
    response = client.post(reverse("suite_search", args=[suite.code]), form)
    html = response.content.decode()
    assert response.status_code == 200 and "2 started, 1 refused, of 3 problems." in html
    assert html.count('class="outcome-started"') == 2 and Search.objects.count() == 2
    detail = client.get(reverse("suite_detail", args=[suite.code])).content.decode()
    assert reverse("run_start", args=[suite.code]) in detail  # the suite page starts them as a run
    assert f'?suite={suite.code}">2</a> searches on these problems, 2 queued or running' in detail


def test_the_suite_page_says_what_is_in_progress_and_serves_its_moving_part(client, suite):
    client.force_login(d.user())
    url = reverse("suite_detail", args=[suite.code])
    assert 'data-busy="false"' in client.get(url).content.decode()
    services.suite_start_searches(user=None, suite=suite, name="", **KNOBS)
    waiting = suite.members.get(number=3).problem
    EvaluationJob.objects.create(problem=waiting, purpose="validate")
    d.kernel(problem=waiting, status="pending", run=False)
    page = client.get(url).content.decode()
    assert 'data-busy="true"' in page and "suite_live.js" in page
    fragment = client.get(url + "?fragment=1")
    html = fragment.content.decode()
    assert fragment["Cache-Control"] == "no-store" and "<html" not in html
    assert "In progress: 1 validation and 1 kernel waiting or running, 2 searches queued or running." in html


@pytest.mark.parametrize("lands_after", ["suite_progress", "suite_scores"])
def test_a_verdict_landing_while_the_moving_part_is_drawn_never_stops_the_page_short(client, suite, monkeypatch,
                                                                                      lands_after):
    """The page stops fetching once its moving part says nothing is in progress, so that part must show
    every verdict already: a verdict recorded between its reads leaves it either busy or counted."""
    client.force_login(d.user())
    first, second = (m.problem for m in suite.members.order_by("number")[:2])
    d.kernel(problem=first)
    waiting = d.kernel(problem=second, status="pending", run=False)
    read = getattr(selectors, lands_after)

    def read_then_verdict(*args, **kwargs):
        answer = read(*args, **kwargs)
        Kernel.objects.filter(pk=waiting.pk).update(status="correct", device_name="NVIDIA H200", median_ms=0.5,
                                                     speedup_vs_eager=2.0, speedup_vs_compile=1.6)
        return answer

    monkeypatch.setattr(selectors, lands_after, read_then_verdict)
    html = client.get(reverse("suite_detail", args=[suite.code]) + "?fragment=1").content.decode()
    assert 'id="suite-progress"' in html or re.search(r"Correct <a [^>]*>2</a>", html), html


def test_search_every_problem_counts_every_search_against_the_cap(client, suite, settings):
    settings.MAX_ACTIVE_SEARCHES_PER_USER = 1
    user = d.user()
    rows = services.suite_start_searches(user=user, suite=suite, name="", **KNOBS)
    assert [r.outcome for r in rows] == ["started", "refused", "refused"]
    assert rows[1].reason == rows[2].reason == ("not started: You have 1 search queued or running; the cap is 1 per "
                                                "person. Start this one when one of them has finished, or pause or "
                                                "cancel one.")
    client.force_login(user)
    response = client.post(reverse("suite_search", args=[suite.code]), {k: v for k, v in KNOBS.items() if v is not None})
    assert response.status_code == 429 and "You have 1 search queued or running" in response.content.decode()
    assert Search.objects.count() == 1
