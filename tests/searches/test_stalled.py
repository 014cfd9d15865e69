"""A search that is not advancing says why ("stalled: <reason>") instead of "Running", on the
Searches list and its own page; every page says when jobs wait and no evaluator reports."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Worker
from lib import storage
from live.models import SearchEvent
from searches.engine import loop
from live.models import SearchEvent
from searches.models import Search
from searches.selectors import health

from .test_engine import kicks, problem, start  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_health")]


@pytest.fixture
def viewer(client):
    client.force_login(get_user_model().objects.create_user("viewer", password="pw-viewer-123"))
    return client


def beat(minutes_ago: float, device="cpu") -> None:
    Worker.objects.update_or_create(name=f"w-{device}", defaults={
        "device": device, "heartbeat_at": timezone.now() - timedelta(minutes=minutes_ago)})


def running_with_a_queued_job(problem) -> Search:
    search = start(problem)
    loop.advance(search.id)  # running, its seed kernel queued, the lease released
    search.refresh_from_db()
    assert search.status == Search.Status.RUNNING and not search.engine_lease_owner
    return search


def test_a_search_whose_engine_lease_ran_out_is_listed_as_stalled(viewer, problem):
    search = running_with_a_queued_job(problem)
    beat(0)
    until = timezone.now() - timedelta(seconds=5)
    Search.objects.filter(pk=search.pk).update(engine_lease_owner="dead-orchestrator", engine_lease_until=until)
    page = viewer.get(reverse("search_list")).content.decode()
    assert f"stalled: the engine stopped reporting at {timezone.localtime(until):%H:%M}; waiting for the scheduler" in page
    assert ">Running<" not in page
    detail = viewer.get(reverse("search_detail", args=[search.code])).content.decode()
    assert 'id="search-status" data-status="running">stalled: the engine stopped reporting' in detail


def test_a_search_with_a_live_lease_or_a_live_evaluator_is_running(viewer, problem):
    search = running_with_a_queued_job(problem)
    beat(0)
    assert ">Running<" in viewer.get(reverse("search_list")).content.decode()  # queued for a live evaluator
    Search.objects.filter(pk=search.pk).update(engine_lease_owner="busy", engine_lease_until=timezone.now()
                                               + timedelta(seconds=30))
    beat(30)
    assert ">Running<" in viewer.get(reverse("search_list")).content.decode()  # its engine is at work


def test_jobs_waiting_on_a_silent_evaluator_stall_the_search_and_show_a_banner(viewer, problem):
    search = running_with_a_queued_job(problem)
    page = viewer.get(reverse("search_list")).content.decode()
    assert "stalled: no CPU evaluator has reported yet" in page
    assert "No CPU evaluator has reported yet while 1 job waits" in page
    beat(10)
    page = viewer.get(reverse("search_detail", args=[search.code])).content.decode()
    assert "stalled: no CPU evaluator has reported in 10 minutes" in page
    assert "No CPU evaluator has reported since" in page
    beat(0)
    page = viewer.get(reverse("search_list")).content.decode()
    assert "stalled" not in page and 'id="health-banner"' not in page


def test_a_quiet_search_with_nothing_to_judge_waits_for_the_scheduler(viewer, problem):
    search = start(problem)  # queued: the task that starts it never ran
    assert ">Queued<" in viewer.get(reverse("search_list")).content.decode()
    quiet_since = timezone.now() - health.QUIET_AFTER - timedelta(seconds=1)
    Search.objects.filter(pk=search.pk).update(created_at=quiet_since)
    assert ">Queued<" in viewer.get(reverse("search_list")).content.decode()  # its last event is recent
    SearchEvent.objects.filter(search=search).update(created_at=quiet_since)
    assert "stalled: waiting for the scheduler" in viewer.get(reverse("search_list")).content.decode()


def test_the_stall_reasons_cost_three_queries_however_many_searches(problem):
    beat(0)
    searches = [running_with_a_queued_job(problem) for _ in range(2)]
    with CaptureQueriesContext(connection) as few:
        health.search_stalls(searches=searches)
    searches += [running_with_a_queued_job(problem) for _ in range(4)]
    with CaptureQueriesContext(connection) as many:
        assert health.search_stalls(searches=searches) == {search.id: "" for search in searches}
    assert len(many.captured_queries) == len(few.captured_queries) == 3


def test_a_search_stalled_by_a_storage_fault_names_it(viewer, problem):
    search = running_with_a_queued_job(problem)
    beat(0)
    Search.objects.filter(pk=search.pk).update(engine_lease_owner="cannot-renew",
                                               engine_lease_until=timezone.now() - timedelta(seconds=5))
    storage.record_fault("database or disk is full", where="the engine")
    page = viewer.get(reverse("search_list")).content.decode()
    assert "stalled: storage problem: database or disk is full" in page
    assert "Storage problem: database or disk is full since" in page  # and the banner
