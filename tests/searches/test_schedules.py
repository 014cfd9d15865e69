"""The task queue's periodic tasks: `migrate` creates them (once, however often it runs), and the
re-kick they run advances a stalled search with no evaluator around."""

from datetime import timedelta
from pydoc import locate

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import Schedule
from django_q.signing import SignedPackage

from searches.models import Search
from searches.schedules import REKICK_NAME
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db(transaction=True)


def queued_task_names() -> list[str]:
    broker, names = get_broker(), []
    while tasks := broker.dequeue():
        names += [SignedPackage.loads(payload)["name"] for _, payload in tasks]
    return names


def test_migrate_creates_the_rekick_schedule_once():
    call_command("migrate", verbosity=0)  # again, as each start of scripts/start does
    [schedule] = Schedule.objects.filter(func="searches.tasks.rekick_stalled_searches")
    assert schedule.name == REKICK_NAME
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == (Schedule.MINUTES, 1, -1)


def test_the_scheduled_rekick_advances_a_stalled_search_only():
    problem = d.problem()
    stalled = d.search(problem=problem, status="running")  # its task was lost: lease ran out
    Search.objects.filter(pk=stalled.pk).update(engine_lease_owner="gone", engine_lease_until=timezone.now()
                                                - timedelta(seconds=5))
    busy = d.search(problem=problem, status="running")  # an orchestrator holds it now
    Search.objects.filter(pk=busy.pk).update(engine_lease_owner="alive", engine_lease_until=timezone.now()
                                             + timedelta(seconds=60))
    d.search(problem=problem, status="completed")
    queued_task_names()  # whatever creating the rows queued

    rekick = locate(Schedule.objects.get(name=REKICK_NAME).func)
    assert rekick() == 1
    names = queued_task_names()
    assert len(names) == 1 and names[0].startswith(f"advance-search-{stalled.id}-")
