"""A problem's own stream (its validations, its kernels of no search): numbered in commit order,
replayed after a sequence number, then live, as a search's is."""

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import transaction

from live import events
from live.models import ProblemEvent, StreamCounter
from live.routing import websocket_urlpatterns
from searches.services import events as search_events
from tests.searches import dashboard_data as d

pytestmark = [pytest.mark.django_db(transaction=True)]


def problem_with_events(n: int):
    user, problem = d.user(), d.problem()
    for i in range(n):
        with transaction.atomic():
            events.publish_problem(problem.id, "job.phase", {"phase": f"p{i}"})
    return user, problem


def publish(problem_id: int):
    with transaction.atomic():
        events.publish_problem(problem_id, "problem.validation", {"validation_status": "ok"})


async def test_replays_after_a_number_then_sends_live_events():
    user, problem = await sync_to_async(problem_with_events)(3)
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/problems/{problem.code}/?after=1")
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    replayed = [await comm.receive_json_from() for _ in range(2)]
    assert [m["seq"] for m in replayed] == [2, 3] and replayed[0]["payload"] == {"phase": "p1"}
    await sync_to_async(publish)(problem.id)
    live = await comm.receive_json_from(timeout=5)
    assert (live["seq"], live["kind"]) == (4, "problem.validation")
    await comm.disconnect()


def test_a_counter_behind_the_log_does_not_reuse_a_number():
    _, problem = problem_with_events(2)
    StreamCounter.objects.filter(stream=events.PROBLEM, owner_id=problem.pk).update(last_seq=0)  # written back stale
    publish(problem.id)
    assert list(ProblemEvent.objects.filter(problem=problem).values_list("seq", flat=True)) == [1, 2, 3]
    assert events.last_seq(events.PROBLEM, problem.pk) == 3


def test_a_kernel_of_no_search_is_told_on_its_problems_stream():
    problem = d.problem()
    kernel = d.kernel(problem=problem, status="pending", run=False)
    with transaction.atomic():
        search_events.publish_kernel(kernel, "kernel.updated")
    event = ProblemEvent.objects.get(problem=problem)
    assert event.kind == "kernel.updated" and event.payload["code"] == str(kernel.code)
