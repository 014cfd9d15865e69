"""What the live payloads carry, so an open page can draw a change without a reload."""

from datetime import timedelta

import pytest
from django.db import transaction

from live.models import SearchEvent
from searches.models import Search
from searches.services import events
from tests.searches import dashboard_data as d

pytestmark = [pytest.mark.django_db]


def test_a_repair_names_the_kernel_it_repairs():
    p = d.problem()
    s = d.search(problem=p)
    broken = d.kernel(problem=p, search=s, status="compile_error")
    repair = d.kernel(problem=p, search=s, parent=broken.parent, origin="repair", repair_of=broken)
    with transaction.atomic():
        events.publish_kernel(repair, "kernel.created")
        events.publish_kernel(broken, "kernel.updated")
    told = {e.payload["id"]: e.payload for e in SearchEvent.objects.filter(search=s)}
    assert told[repair.id]["repair_of_id"] == broken.id
    assert told[broken.id]["repair_of_id"] is None


def test_a_status_event_carries_the_start_and_finish_times():
    s = d.search(problem=d.problem(), status=Search.Status.QUEUED, started_at=None)
    with transaction.atomic():
        events.publish_search_status(s)
    assert SearchEvent.objects.get(search=s).payload["started_at"] is None
    s.status = Search.Status.COMPLETED
    s.finished_at = s.created_at
    with transaction.atomic():
        events.publish_search_status(s)
    last = SearchEvent.objects.filter(search=s).order_by("-seq").first().payload
    assert last["finished_at"] == s.created_at.isoformat()
    assert last["elapsed_s"] is None  # never started
    s.started_at = s.created_at - timedelta(seconds=2.5)
    with transaction.atomic():
        events.publish_search_status(s)
    assert SearchEvent.objects.filter(search=s).order_by("-seq").first().payload["elapsed_s"] == 2.5
