"""Where a waiting job stands and about when it runs, on the problem, kernel and search pages."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation import queue as job_queue
from evaluation.models import EvaluationJob, Worker
from searches import selectors
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def job(problem, kernel=None, *, status="queued", priority=0, seconds=None, device="cpu"):
    made = EvaluationJob.objects.create(problem=problem, kernel=kernel, status=status, priority=priority, device=device)
    if seconds is not None:
        end = timezone.now() - timedelta(minutes=5)
        EvaluationJob.objects.filter(pk=made.pk).update(started_at=end - timedelta(seconds=seconds), finished_at=end)
    return made


def worker(name, device="cpu"):
    return Worker.objects.create(name=name, device=device, heartbeat_at=timezone.now())


@pytest.fixture
def queue():
    p = d.problem()
    for seconds in (10, 20, 30):  # history: the median job takes 20 s
        job(p, status="done", seconds=seconds)
    running = job(p, status="leased")
    urgent = job(p, priority=10)
    older = job(p)
    mine = job(p)
    job(p, device="cuda")  # another device's queue does not count
    return {"problem": p, "running": running, "urgent": urgent, "older": older, "mine": mine}


def test_position_counts_what_is_claimed_first_and_the_wait_shares_it_among_evaluators(queue):
    worker("w1")
    place = selectors.queue_position(queue["mine"])
    assert (place["position"], place["running"], place["workers"], place["job_seconds"]) == (3, 1, 1, 20)
    assert place["wait_seconds"] == 60  # two ahead and one running, one at a time
    worker("w2")
    assert selectors.queue_position(queue["mine"])["wait_seconds"] == 40  # ceil(3 / 2) rounds of 20 s
    assert selectors.queue_position(queue["urgent"])["position"] == 1
    assert selectors.queue_position(queue["running"]) is None
    text = selectors.queue_wait_text(selectors.queue_position(queue["mine"]))
    assert text == ("Position 3 in the cpu evaluation queue (1 running now): starts in about 40 s "
                    "(2 evaluators, recent jobs take 20 s each).")


def test_no_estimate_without_an_evaluator_or_without_history():
    p = d.problem()
    waiting = job(p)
    assert "no cpu evaluator has reported" in selectors.queue_wait_text(selectors.queue_position(waiting))
    worker("w1")
    assert selectors.queue_wait_text(selectors.queue_position(waiting)).endswith(
        "an idle evaluator takes it within seconds.")
    job(p, status="leased")
    assert "no finished job yet" in selectors.queue_wait_text(selectors.queue_position(waiting))


def test_a_waiting_validation_says_where_it_stands(queue):
    worker("w1")
    p = queue["problem"]
    p.validation_status = "pending"
    p.save()
    EvaluationJob.objects.filter(pk=queue["mine"].pk).update(purpose="validate")
    state = selectors.problem_validation_state(p)
    assert state["pending"] and "Position 3 in the cpu evaluation queue" in state["message"]
    assert "starts in about 60 s" in state["message"]


def test_the_kernel_and_search_pages_show_the_queue(client, queue):
    user = d.user()
    client.force_login(user)
    worker("w1")
    s = d.search(problem=queue["problem"], created_by=user)
    k = d.kernel(problem=queue["problem"], search=s, status="pending", run=False)
    EvaluationJob.objects.filter(pk=queue["mine"].pk).update(kernel=k)
    html = client.get(reverse("kernel_detail", args=[k.code])).content.decode()
    assert 'id="queue-note">Position 3 in the cpu evaluation queue' in html
    for url in (reverse("search_detail", args=[s.code]), reverse("search_insights", args=[s.code])):
        html = client.get(url).content.decode()
        assert "1 candidate waits for evaluation; the first: position 3 in the cpu evaluation queue" in html, url
    EvaluationJob.objects.filter(pk=queue["mine"].pk).update(status="leased")
    assert 'id="queue-note"' not in client.get(reverse("kernel_detail", args=[k.code])).content.decode()


def test_a_kernel_pages_poll_says_queue_place_then_evaluating_then_settled(client):
    user = d.user()
    client.force_login(user)
    p = d.problem()
    k = d.kernel(problem=p, status="pending", name="waits", run=False)
    job = job_queue.enqueue_kernel(k)
    url = reverse("kernel_status", args=[k.code])
    assert client.get(url).json()["text"].startswith("Position 1 in the cpu evaluation queue")
    EvaluationJob.objects.filter(pk=job.pk).update(status="leased", run_started_at=timezone.now() - timedelta(seconds=42))
    state = client.get(url).json()
    assert state["settled"] is False and state["phase"] == "starting"
    assert state["text"] == ("Starting a sandbox for 42 s; 42 s since the run began. No finished run with phase times "
                             "yet to estimate the rest from.")
    k.status = "correct"
    k.save(update_fields=["status"])
    assert client.get(url).json()["settled"] is True


def test_a_running_jobs_phase_and_the_time_left_by_recent_runs_phase_medians(client):
    p = d.problem()
    end = timezone.now() - timedelta(minutes=1)
    for compiling, timing in ((10, 4), (20, 6), (30, 8)):  # medians: compiling 20 s, timing 6 s
        EvaluationJob.objects.create(problem=p, status="done", finished_at=end, purpose="manual",
                                     phase_seconds={"starting": 1, "compiling": compiling, "checking": 2,
                                                    "timing": timing, "judging": 1})
    EvaluationJob.objects.create(problem=p, status="done", finished_at=end, purpose="validate",
                                 phase_seconds={"timing": 500})  # another kind: not an evaluation's history
    k = d.kernel(problem=p, status="evaluating", name="runs", run=False)
    now = timezone.now()
    job = EvaluationJob.objects.create(problem=p, kernel=k, status="leased", purpose="manual",
                                       run_started_at=now - timedelta(seconds=16), phase="compiling",
                                       phase_started_at=now - timedelta(seconds=15))
    state = selectors.kernel_progress(k, now=now)
    assert (state["phase"], state["phase_s"], state["elapsed_s"]) == ("compiling", 15, 16)
    assert state["left_s"] == 5 + 2 + 6 + 1  # the rest of compiling, then checking, timing, judging
    assert state["text"] == ("Compiling for 15 s; 16 s since the run began: about 14 s left (median phase times of "
                             "the last cpu evaluations).")
    EvaluationJob.objects.filter(pk=job.pk).update(phase="judging", phase_started_at=now - timedelta(seconds=9))
    assert "longer than recent runs' median" in selectors.kernel_progress(k, now=now)["text"]
    # Queued (again): the wait, then the run's length by the same medians.
    EvaluationJob.objects.filter(pk=job.pk).update(status="queued", phase="")
    assert selectors.kernel_progress(k, now=now)["text"].endswith(
        "Its run then takes about 30 s (median phase times of the last cpu evaluations).")


def test_a_searchs_waiting_reruns_are_named_as_reruns_not_candidates(queue):
    from searches.views.searches import search_queue_note

    search = d.search(problem=queue["problem"])
    first, second = (d.kernel(problem=queue["problem"], search=search) for _ in range(2))
    EvaluationJob.objects.create(problem=queue["problem"], kernel=first, purpose="rerun")
    assert search_queue_note(search).startswith("1 verified rerun waits for evaluation; the first: position ")
    EvaluationJob.objects.create(problem=queue["problem"], kernel=second)
    assert search_queue_note(search).startswith("1 candidate and 1 verified rerun wait for evaluation")
