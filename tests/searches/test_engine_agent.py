"""Agent mode with the real `anthropic` SDK against the local fake Messages API, the real loop, queue
and services on the database. The tool runs are real EvaluationJob rows waited for by the kernel
call's thread; here a stand-in evaluator answers them with runner-shaped results (the real runner
answers them in test_engine_agent_e2e.py). What the model was told is read off the fake's requests."""

import threading

import pytest
from django.test import Client

from evaluation.models import EvaluationJob
from proposers import prompts
from searches import services
from searches.engine import loop
from searches.models import Kernel, ProposerCall
from tests.fakes.anthropic_server import ToolCall, task_of

from .test_engine import problem, runner_verdict  # noqa: F401  (fixture)
from .test_engine_llm import fake, kernel_source, kicks, start  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads

COMPILE_ERROR = {"status": "compile_error", "reason": "the kernel did not compile: kernel.c:5:3: error: 'yy' undeclared",
                 "log": "kernel.c: In function 'softmax':\nkernel.c:5:3: error: 'yy' undeclared\n"}


class StandIn:
    """Answers the search's tool runs as the evaluator would record them (services.tool_job_record)."""

    def __init__(self, answer=lambda job: COMPILE_ERROR):
        self.answer, self.stop = answer, threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        from django.db import close_old_connections

        while not self.stop.is_set():
            for job in EvaluationJob.objects.filter(purpose="tool", status="queued"):
                services.tool_job_record(job=job, result=self.answer(job))
            self.stop.wait(0.05)
        close_old_connections()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)


def test_the_setting_and_its_cap_where_the_other_knobs_live(problem, fake):
    from django.core.exceptions import ValidationError

    from searches.forms import SearchStartForm

    with pytest.raises(ValidationError, match="agent tool calls must be a whole number from 1 to 20"):
        start(problem, agent_mode=True, agent_tool_calls=0)
    form = SearchStartForm({"proposer": "anthropic", "device": "cpu", "rounds": 1, "parents_per_round": 1,
                            "ideas_per_parent": 1, "kernels_per_idea": 1, "bank_size": 0, "agent_mode": "on"})
    assert form.is_valid(), form.errors
    assert (form.search_fields()["agent_mode"], form.search_fields()["agent_tool_calls"]) == (True, 4)
    search = services.search_start(problem=problem, user=None, **form.search_fields())
    assert (search.agent_mode, search.agent_tool_calls) == (True, 4)
    assert {"agent_mode", "agent_tool_calls"} <= services.SEARCH_FORK_OVERRIDES  # a fork keeps or changes them


def test_agent_mode_off_offers_only_the_two_tools_and_no_tool_loop(problem, fake):
    search = start(problem)
    loop.advance(search.id)
    [seen] = fake.requests
    assert [t["name"] for t in seen.body["tools"]] == ["propose_ideas", "submit_kernel"]
    assert seen.body["tool_choice"] == {"type": "tool", "name": "submit_kernel"}
    assert "`compile`" not in seen.user_text
    assert not EvaluationJob.objects.filter(purpose="tool").exists()


def test_the_cap_is_honoured_then_one_forced_submit(problem, fake):
    """A model that would compile forever: two runs (the cap), then a turn that forces submit_kernel."""
    search = start(problem, agent_mode=True, agent_tool_calls=2)
    fake.responder = lambda seen: ToolCall("compile", {"source": kernel_source(f"draft {len(fake.requests)}")})
    with StandIn():
        loop.advance(search.id)
    first, second, third = fake.requests
    assert [t["name"] for t in first.body["tools"]] == ["propose_ideas", "submit_kernel", "compile", "check", "profile"]
    assert first.body["tool_choice"] == second.body["tool_choice"] == {"type": "auto"}
    assert "at most 2 tool calls in all for this kernel" in first.user_text
    # Each run's answer reaches the next request as the tool_result of its call.
    [result] = second.tool_results
    assert result["tool_use_id"] == first_tool_use_id(second)
    assert "It does not build" in result["content"] and "error: 'yy' undeclared" in result["content"]
    assert third.body["tool_choice"] == {"type": "tool", "name": "submit_kernel"}
    assert prompts.agent_last_turn(2) in [b.get("text") for b in third.body["messages"][-1]["content"]]
    assert EvaluationJob.objects.filter(search=search, purpose="tool").count() == 2  # never more than the cap
    kernel = Kernel.objects.get(search=search)
    assert kernel.source.startswith(kernel_source("draft 3").strip())  # the forced turn's submission
    [call] = ProposerCall.objects.filter(search=search)
    assert call.tool_calls == 2 and call.ok
    assert "[compile result, tool call 2 of 2]" in call.reply


def test_tool_runs_count_against_the_candidates_budget(problem, fake):
    search = start(problem, agent_mode=True, agent_tool_calls=4, max_candidates=3)
    fake.responder = lambda seen: ToolCall("compile", {"source": kernel_source(f"draft {len(fake.requests)}")})
    with StandIn():
        loop.advance(search.id)
    # two runs and the kernel fill the budget: the third run is refused, never queued
    assert EvaluationJob.objects.filter(search=search, purpose="tool").count() == 2
    refused = [r["content"] for s in fake.requests for r in s.tool_results if r.get("is_error")]
    assert refused and all("budget has no room" in text for text in refused)
    assert Kernel.objects.filter(search=search).count() == 1
    search.refresh_from_db()
    assert loop.budget_reached(search) == "budget reached: 3 of at most 3 candidates (2 of them tool runs)"


def test_tool_turns_keep_their_thinking_blocks_and_the_last_turn_is_not_forced_under_thinking(problem, fake):
    search = start(problem, agent_mode=True, agent_tool_calls=1, thinking_tokens=1024)
    fake.responder = lambda seen: ToolCall("check", {"source": kernel_source(f"draft {len(fake.requests)}")})
    with StandIn(lambda job: runner_verdict("correct")):
        loop.advance(search.id)
    first, second = fake.requests[:2]
    assistant = second.body["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"][0]["type"] == "thinking"  # the fake refuses otherwise
    assert second.tool_results[0]["content"].startswith("Correct on the problem's 0 input distributions")
    assert all(s.body["tool_choice"] == {"type": "auto"} for s in fake.requests)  # the API refuses a forced tool
    assert ProposerCall.objects.get(search=search).tool_calls == 1


def test_the_kernel_page_shows_the_tool_calls_of_its_exchange(problem, fake, django_user_model):
    search = start(problem, agent_mode=True, agent_tool_calls=1)
    replies = iter([ToolCall("compile", {"source": kernel_source("draft")}),
                    ToolCall("submit_kernel", {"source": kernel_source("final")})])
    fake.responder = lambda seen: next(replies)
    with StandIn():
        loop.advance(search.id)
    kernel = Kernel.objects.get(search=search)
    client = Client()
    client.force_login(django_user_model.objects.create_user("viewer", password="x"))
    page = client.get(f"/kernels/{kernel.code}/")
    assert page.status_code == 200, page.status_code
    html = page.content.decode()
    assert "1 tool run on drafts in the sandbox" in html
    assert "[compile]" in html and "[compile result, tool call 1 of 1]" in html and "It does not build" in html


def test_calls_of_tools_that_run_nothing_still_end_in_a_forced_submit(problem, fake):
    search = start(problem, agent_mode=True, agent_tool_calls=1)
    fake.responder = lambda seen: ToolCall("propose_ideas", {"ideas": []})
    loop.advance(search.id)
    # each try: cap + 1 turns answered "not a tool of this task", then the forced turn; the forced reply
    # has no source, so it is asked once more, then the kernel is a no-code node
    assert [s.body["tool_choice"]["type"] for s in fake.requests] == ["auto", "auto", "tool"] * 2
    assert "is not a tool of this task" in fake.requests[1].tool_results[0]["content"]
    assert Kernel.objects.get(search=search).status == "no_code"
    assert not EvaluationJob.objects.filter(purpose="tool").exists()


def first_tool_use_id(seen) -> str:
    return next(b["id"] for b in seen.body["messages"][1]["content"] if b["type"] == "tool_use")


def test_a_paused_search_ends_the_wait_for_a_tool_run(problem, fake):
    search = start(problem, agent_mode=True, agent_tool_calls=2)
    fake.responder = lambda seen: ToolCall("compile", {"source": kernel_source("draft")})

    def pause_once_queued():
        while not EvaluationJob.objects.filter(search=search, purpose="tool").exists():
            threading.Event().wait(0.05)
        services.search_pause(search=search, user=None)

    pauser = threading.Thread(target=pause_once_queued, daemon=True)
    pauser.start()
    loop.advance(search.id)
    pauser.join(5)
    [call] = ProposerCall.objects.filter(search=search)
    assert not call.ok and "abandoned" in call.error
    assert call.output_tokens == fake.usage_given["output"] > 0  # the turn before the wait was paid for
    assert not Kernel.objects.filter(search=search).exists()
    assert EvaluationJob.objects.get(search=search, purpose="tool").status == "failed"  # withdrawn, never run
    assert [task_of(s) for s in fake.requests] == ["starting kernel"]


def test_cancelling_a_search_withdraws_its_queued_tool_runs(problem, fake):
    from evaluation import queue

    search = start(problem, agent_mode=True)
    job = queue.enqueue_tool(search, tool="check", source=kernel_source("draft"))
    services.search_cancel(search=search, user=None)
    job.refresh_from_db()
    assert (job.status, job.last_error) == ("failed", "not evaluated: the search was cancelled")
