"""The Anthropic proposer's replies and requests step by step, with the real `anthropic` SDK against
the local fake Messages API: the model's analysis, replies without a tool call, a model per step,
the cache layout. Assertions read the requests the fake received."""

import pytest
from django.urls import reverse

from searches.engine import loop
from searches.models import Kernel, ProposerCall
from tests.fakes.anthropic_server import Behaviour, kernel_call, task_of

from . import dashboard_data as d
from .test_engine import problem  # noqa: F401  (fixture)
from .test_engine_llm import fake, judge, kernel_source, kicks, start  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads

ANALYSIS = {"bottleneck": "one thread per row leaves most cores idle", "plan": "split each row over 8 threads",
            "expected_speedup": 3.5}


def test_the_models_analysis_is_asked_for_stored_on_the_kernel_and_shown_on_its_page(problem, fake, client):
    search = start(problem)
    client.force_login(d.user())
    fake.script = [Behaviour(tool_input=kernel_call(kernel_source("seed"), analysis={**ANALYSIS, "plan": 7}))]
    loop.advance(search.id)
    [seen] = fake.requests
    schema = next(t for t in seen.body["tools"] if t["name"] == "submit_kernel")["input_schema"]
    assert set(schema["properties"]["analysis"]["properties"]) == {"bottleneck", "plan", "expected_speedup"}
    assert "your `analysis` (the bottleneck, your plan, the speedup you expect)" in seen.user_text
    seed = Kernel.objects.get(search=search)
    # A malformed part (plan: 7) is left out; the rest is kept.
    assert seed.analysis == {"bottleneck": ANALYSIS["bottleneck"], "expected_speedup": 3.5}
    page = client.get(reverse("kernel_detail", args=[seed.code])).content.decode()
    assert "one thread per row leaves most cores idle" in page and "3.50× over its parent" in page


def test_a_reply_without_a_tool_call_under_auto_is_counted_and_asked_again_once_then_a_failed_call(problem, fake):
    search = start(problem, thinking_tokens=2048)
    fake.script = [Behaviour(reply="I will first think about the layout."), Behaviour(reply="Let me reconsider.")]
    loop.advance(search.id)
    first, second = fake.requests
    assert first.body["tool_choice"] == {"type": "auto"} and "it called no tool" not in first.user_text
    assert "could not be used (it called no tool (the reply had no ```python code block))" in second.user_text
    [call] = ProposerCall.objects.filter(search=search)
    assert not call.ok and call.no_tool_replies == 2
    assert call.error.startswith("the model replied twice without calling `submit_kernel` (tool_choice auto")
    search.refresh_from_db()
    assert search.status == "paused" and "replied twice without calling `submit_kernel`" in search.stop_reason
    assert not Kernel.objects.filter(search=search).exists()


def test_a_reply_without_a_tool_call_then_a_tool_call_makes_the_kernel_and_is_counted(problem, fake):
    search = start(problem, effort="high")
    fake.script = [Behaviour(reply="Thinking aloud, no code yet.")]
    loop.advance(search.id)
    assert [task_of(s) for s in fake.requests] == ["starting kernel", "starting kernel"]
    [call] = ProposerCall.objects.filter(search=search)
    assert call.ok and call.no_tool_replies == 1
    assert Kernel.objects.get(search=search).status == "pending"
