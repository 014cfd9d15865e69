"""The orchestrator's lease on a search: a renewal reports a lost lease, and a loop that lost
its lease stops after the step it was in, leaving the search to the new holder."""

from datetime import timedelta

import pytest
from django.utils import timezone

from searches.engine import lease, loop
from searches.models import Kernel, Search

from .test_engine import kicks, problem, start  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def test_a_renewal_reports_a_lease_another_orchestrator_took(problem):
    search = start(problem)
    assert lease.acquire(search.id, "first") and lease.renew(search.id, "first")
    Search.objects.filter(pk=search.id).update(engine_lease_until=timezone.now() - timedelta(seconds=1))
    assert lease.acquire(search.id, "second")  # the first one's lease ran out
    assert lease.renew(search.id, "first") is False
    assert lease.renew(search.id, "second") is True


def test_a_loop_that_lost_its_lease_stops_after_its_step(problem):
    search = start(problem)
    assert search.status == Search.Status.QUEUED
    assert lease.acquire(search.id, "second")  # taken over while the first loop was in a step
    loop._work(search.id, "first")
    search.refresh_from_db()
    assert search.status == Search.Status.RUNNING  # the step it was in
    assert not Kernel.objects.filter(search=search).exists()  # and nothing after it
    assert search.engine_lease_owner == "second"
