"""A failed orchestration ends the search as `failed` with its reason, on the search page and
in `manage.py search`'s exit status, instead of leaving it spinning. The fault is injected at
the proposer (the one part the engine calls outside its own code); the engine, the database,
the worker loop and the runner are real."""

import signal

import pytest
from django.core.management import call_command
from django.db import OperationalError
from django.urls import reverse

from proposers.playbook import PlaybookProposer
from live.models import SearchEvent
from searches import services
from searches.catalog import get as catalog_get
from searches.engine import kick, loop
from searches.models import Search

from .test_engine import runner_verdict

LOCKED = "database is locked"


def validated_problem():
    entry = catalog_get("softmax-cpu")
    problem = services.problem_create(user=None, name=entry.name, source=entry.source, device="cpu",
                                      catalog_key=entry.key, family=entry.family)
    services.problem_record_validation(problem=problem, job=problem.jobs.get(), result={
        **runner_verdict(), "status": "ok", "outputs": [{"shape": [128, 4096], "dtype": "float32"}],
        "family": "softmax", "flops": 1.0, "min_bytes": 1.0,
    })
    problem.refresh_from_db()
    return problem


def break_proposer(monkeypatch, error: Exception):
    def starting_kernel(self, problem):
        raise error

    monkeypatch.setattr(PlaybookProposer, "starting_kernel", starting_kernel)
    monkeypatch.setattr(loop, "STEP_RETRY_SECONDS", 0.01)


@pytest.mark.django_db
@pytest.mark.parametrize("error, shown", [
    (ValueError("a bug in the loop"), "ValueError: a bug in the loop"),
    (OperationalError(LOCKED), f"OperationalError: {LOCKED}"),  # before: re-raised, and nothing noticed
])
def test_an_error_in_the_round_loop_fails_the_search_with_its_reason(monkeypatch, client, error, shown):
    break_proposer(monkeypatch, error)
    kick.set_kicker(lambda search_id: None)
    try:
        search = services.search_start(problem=validated_problem(), user=None, proposer="playbook", device="cpu",
                                       rounds=1, parents_per_round=1, ideas_per_parent=1, kernels_per_idea=1)
        loop.advance(search.id)
    finally:
        kick.set_kicker(None)
    search.refresh_from_db()
    assert search.status == Search.Status.FAILED and search.finished_at is not None
    assert search.stop_reason == f"the search engine stopped on an error: {shown}"
    assert search.engine_lease_owner == ""  # given back: a resumed or forked search is not blocked
    last = SearchEvent.objects.filter(search=search).latest("seq")
    assert (last.kind, last.payload["status"]) == ("search.status", "failed")

    from django.contrib.auth.models import User

    client.force_login(User.objects.create_user("reader", password="x"))
    page = client.get(reverse("search_detail", args=[search.code])).content.decode()
    assert shown in page and "failed" in page


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_search_command_exits_non_zero_when_the_orchestration_fails(monkeypatch, capsys):
    # Reported: the orchestrator died on "database is locked" and the command waited forever.
    break_proposer(monkeypatch, OperationalError(LOCKED))
    problem = validated_problem()
    # The command installs its own SIGTERM handler; here pytest's stays.
    monkeypatch.setattr(signal, "signal", lambda *args: None)
    with pytest.raises(SystemExit) as exited:
        call_command("search", str(problem.id), "--rounds", "1", "--proposer", "playbook", "--no-progress")
    assert exited.value.code == 1
    search = Search.objects.get(problem=problem)
    assert search.status == Search.Status.FAILED
    assert f"failed — the search engine stopped on an error: OperationalError: {LOCKED}" in capsys.readouterr().out
