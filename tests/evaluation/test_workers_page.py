"""The Workers page: statuses from heartbeat ages, current jobs, the queue per device, warnings
when jobs wait with no worker, the live fragment, and a bounded number of queries."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation import selectors
from evaluation.models import EvaluationJob, Worker
from searches.models import Kernel
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

URL = reverse("worker_list")


@pytest.fixture
def alice(client):
    user = d.user()
    client.force_login(user)
    return user


def seconds_ago(seconds):
    return timezone.now() - timedelta(seconds=seconds)


def worker(name, *, device="cuda", silent_for=1.0, job=None, **extra):
    return Worker.objects.create(name=name, host="gpu-host", pid=4242, device=device, device_name="NVIDIA H200",
                                 heartbeat_at=seconds_ago(silent_for), current_job=job, **extra)


def job(problem, *, kernel=None, device="cuda", status="queued", owner="", age=0, finished_ago=None):
    made = EvaluationJob.objects.create(
        problem=problem, kernel=kernel, device=device, status=status, lease_owner=owner,
        purpose="search" if kernel else "validate",
        lease_expires_at=timezone.now() + timedelta(minutes=5) if status == "leased" else None,
        finished_at=seconds_ago(finished_ago) if finished_ago is not None else None)
    EvaluationJob.objects.filter(pk=made.pk).update(created_at=seconds_ago(age))  # auto_now_add ignores a value
    return made


def rows_by_name():
    return {row["worker"].name: row for row in selectors.worker_overview()["workers"]}


def test_status_follows_the_heartbeat_age():
    stale = selectors.WORKER_STALE_AFTER.total_seconds()
    gone = selectors.WORKER_GONE_AFTER.total_seconds()
    worker("fresh", silent_for=2)
    worker("quiet", silent_for=stale + 5)
    worker("dead", silent_for=gone + 5)
    Worker.objects.create(name="never", device="cpu")
    rows = rows_by_name()
    assert {name: row["status"] for name, row in rows.items()} == {
        "fresh": "alive", "quiet": "stale", "dead": "gone", "never": "gone"}
    assert 1 <= rows["fresh"]["heartbeat_age"] < stale


def test_a_job_shows_only_while_its_worker_holds_the_lease():
    p = d.problem()
    worker("busy", job=job(p, status="leased", owner="busy"))
    # Its job went to another worker after its lease ran out: current_job is stale, not shown.
    worker("lost", silent_for=selectors.WORKER_GONE_AFTER.total_seconds() + 60,
           job=job(p, status="leased", owner="someone-else"))
    rows = rows_by_name()
    assert rows["busy"]["status"] == "alive" and rows["busy"]["job"] is not None
    assert rows["lost"]["status"] == "gone" and rows["lost"]["job"] is None


@pytest.mark.django_db(transaction=True)  # the renewer is a thread with its own connection
def test_a_worker_keeps_beating_while_it_runs_a_long_job(monkeypatch):
    from evaluation import worker as worker_module

    monkeypatch.setattr(worker_module, "HEARTBEAT_SECONDS", 0.1)
    p = d.problem()
    held = job(p, status="leased", owner="busy")
    row = worker("busy", silent_for=selectors.WORKER_STALE_AFTER.total_seconds() + 5, job=held)
    assert rows_by_name()["busy"]["status"] == "stale"
    renewer = worker_module.job_renewer(held.id, "busy")
    renewer.start()
    try:
        deadline = timezone.now() + timedelta(seconds=5)
        while rows_by_name()["busy"]["status"] != "alive" and timezone.now() < deadline:
            renewer.join(0.05)
    finally:
        renewer.stop()
    row.refresh_from_db()
    assert rows_by_name()["busy"]["status"] == "alive" and row.heartbeat_at > seconds_ago(5)


def test_page_lists_workers_with_badges_and_links_to_the_current_job(client, alice):
    p = d.problem(name="Softmax")
    s = d.search(problem=p, created_by=alice, name="softmax hunt")
    k = d.kernel(problem=p, search=s, status="evaluating", name="warp-shuffle")
    worker("gpu0", job=job(p, kernel=k, status="leased", owner="gpu0"), jobs_done=17)
    worker("gpu1", silent_for=selectors.WORKER_GONE_AFTER.total_seconds() + 60)
    response = client.get(URL)
    html = response.content.decode()
    assert response.status_code == 200
    assert f'href="{URL}">Workers</a>' in html  # the nav link
    assert '<span class="badge alive">alive</span>' in html and '<span class="badge gone">gone</span>' in html
    assert "gpu-host · 4242" in html and "NVIDIA H200" in html and ">17</td>" in html
    assert f'href="{reverse("kernel_detail", args=[k.code])}">warp-shuffle</a>' in html
    assert f'href="{reverse("search_detail", args=[s.code])}">softmax hunt</a>' in html
    assert f'href="{reverse("problem_detail", args=[p.code])}">Softmax v1</a>' in html
    assert 'href="/static/js/workers_live.js"' in html.replace("src=", "href=")
    assert "style=" not in html and "<script>" not in html


def test_queue_summary_counts_jobs_per_device():
    p = d.problem()
    for age in (30, 400, 90):
        job(p, age=age)
    job(p, status="leased", owner="gpu0")
    job(p, status="leased", owner="gpu1")
    job(p, status="failed", finished_ago=3600)
    job(p, status="failed", finished_ago=2 * 86400)  # outside the last 24 h
    job(p, status="done", finished_ago=10)
    job(p, device="cpu", status="failed", finished_ago=60)
    queues = {q["device"]: q for q in selectors.worker_overview()["queues"]}
    assert (queues["cuda"]["queued"], queues["cuda"]["running"], queues["cuda"]["failed"]) == (3, 2, 1)
    assert 400 <= queues["cuda"]["oldest_queued_age"] < 460
    assert queues["cpu"] == {"device": "cpu", "label": "CPU", "queued": 0, "running": 0, "failed": 1,
                             "oldest_queued_age": None}


def test_a_job_its_search_cancellation_dropped_is_no_failure_of_the_queue():
    """evaluation reads the kernel's reason code by name (it imports no searches model): the same code."""
    assert selectors.CANCELLED == Kernel.CANCELLED
    p = d.problem()
    dropped = d.kernel(problem=p, status="failed", reason_code=Kernel.CANCELLED)
    failed = d.kernel(problem=p, status="failed")
    job(p, kernel=dropped, status="failed", finished_ago=60)
    job(p, kernel=failed, status="failed", finished_ago=60)
    queues = {q["device"]: q for q in selectors.worker_overview()["queues"]}
    assert queues["cuda"]["failed"] == 1


def test_warning_while_cuda_jobs_wait_without_a_cuda_worker(client, alice):
    p = d.problem()
    for _ in range(3):
        job(p)
    worker("cpu-box", device="cpu")  # a CPU worker does not take CUDA jobs
    worker("old-gpu", silent_for=selectors.WORKER_SEEN_WITHIN.total_seconds() + 30)
    html = client.get(URL).content.decode()
    assert "3 CUDA jobs are waiting and no CUDA worker has sent a heartbeat in the last 120 s." in html
    assert "<code>python manage.py evaluator --device cuda</code>" in html

    Worker.objects.filter(name="old-gpu").update(heartbeat_at=timezone.now())
    assert "CUDA jobs are waiting" not in client.get(URL).content.decode()


def test_no_warning_without_waiting_jobs_and_an_empty_state_that_says_how_to_start_one(client, alice):
    html = client.get(URL).content.decode()
    assert "workers-warning" not in html
    assert "No evaluation worker has reported yet" in html and "python manage.py evaluator --device cuda" in html


def test_fragment_is_only_the_live_part(client, alice):
    worker("gpu0")
    response = client.get(URL + "?fragment=1")
    html = response.content.decode()
    assert response.status_code == 200
    assert "gpu0" in html and "Job queue" in html
    assert "<html" not in html and "<nav" not in html and 'id="workers-live"' not in html


def test_anonymous_user_is_sent_to_log_in(client):
    for url in (URL, URL + "?fragment=1"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_queries_do_not_grow_with_the_number_of_workers(client, alice, django_assert_max_num_queries):
    p = d.problem()
    s = d.search(problem=p, created_by=alice)  # unnamed: its label reads its problem
    for n in range(20):
        k = d.kernel(problem=p, search=s, status="evaluating", run=False)
        worker(f"gpu{n}", job=job(p, kernel=k, status="leased", owner=f"gpu{n}"))
    with django_assert_max_num_queries(6):  # session, user, workers, queue summary
        response = client.get(URL)
    assert response.content.decode().count('class="badge alive"') == 20


def test_workers_silent_for_more_than_a_day_are_counted_not_listed(client, alice):
    worker("today", silent_for=3600)
    worker("last-week", silent_for=7 * 86400)
    worker("last-month", silent_for=30 * 86400)
    overview = selectors.worker_overview()
    assert [row["worker"].name for row in overview["workers"]] == ["today"] and overview["forgotten"] == 2
    html = client.get(URL).content.decode()
    assert "today" in html and "last-week" not in html and "2 workers silent for more than a day not listed" in html

