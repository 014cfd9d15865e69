"""The Anthropic proposer's replies and requests step by step, with the real `anthropic` SDK against
the local fake Messages API: the model's analysis, replies without a tool call, a model per step,
the cache layout. Assertions read the requests the fake received."""

import pytest
from django.urls import reverse

from proposers.pricing import PRICES
from searches import services
from searches.forms import SearchStartForm
from searches.management.commands.search import Command as SearchCommand
from searches.engine import calls, loop
from searches.models import Kernel, ProposerCall, Search
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


def test_a_reply_without_a_tool_call_then_a_tool_call_makes_the_kernel_and_is_counted(problem, fake, client):
    search = start(problem, effort="high")
    fake.script = [Behaviour(reply="Thinking aloud, no code yet.")]
    loop.advance(search.id)
    assert [task_of(s) for s in fake.requests] == ["starting kernel", "starting kernel"]
    [call] = ProposerCall.objects.filter(search=search)
    assert call.ok and call.no_tool_replies == 1
    seed = Kernel.objects.get(search=search)
    assert seed.status == "pending"
    client.force_login(d.user())
    page = client.get(reverse("kernel_detail", args=[seed.code])).content.decode()
    assert '<span id="no-tool-replies">1 reply without a tool call, asked again</span>' in page


def test_each_step_sends_its_own_model_and_each_call_records_it_with_its_price(problem, fake):
    search = start(problem, model="claude-sonnet-4-6", ideas_model="claude-opus-4-6", repair_model="claude-haiku-4-5")
    loop.advance(search.id)
    judge()
    loop.advance(search.id)  # ideas, then its kernel
    judge(status_for=lambda k: "incorrect" if k.variant is not None else "correct")
    loop.advance(search.id)  # the repair
    sent = {task_of(s): s.body["model"] for s in fake.requests}
    assert sent == {"starting kernel": "claude-sonnet-4-6", "ideas": "claude-opus-4-6", "kernel": "claude-sonnet-4-6",
                    "repair": "claude-haiku-4-5"}
    calls = list(ProposerCall.objects.filter(search=search))
    assert {(c.purpose, c.model) for c in calls} == {("kernel", "claude-sonnet-4-6"), ("ideas", "claude-opus-4-6"),
                                                     ("repair", "claude-haiku-4-5")}
    for call in calls:  # each priced as its own model
        price = PRICES[call.model]
        expected = (call.input_tokens * price["input"] + call.output_tokens * price["output"]
                    + call.cache_write_tokens * price["cache_write"] + call.cache_read_tokens * price["cache_read"]) / 1e6
        assert call.cost_usd == pytest.approx(expected) and call.cost_usd > 0
    fork = services.search_fork(search=Search.objects.get(pk=search.id), user=None)
    assert (fork.ideas_model, fork.kernel_model, fork.repair_model) == ("claude-opus-4-6", "", "claude-haiku-4-5")


def test_a_call_in_flight_reserves_its_own_steps_mean_cost(problem, fake):
    search = start(problem, max_cost_usd=2.0)
    Search.objects.filter(pk=search.pk).update(cost_usd=0.5)
    for purpose, cost in (("ideas", 0.6), ("kernel", 0.01)):
        ProposerCall.objects.create(search=search, purpose=purpose, proposer="anthropic", cost_usd=cost)
    search.refresh_from_db()
    # 1.5 left; a kernel call in flight reserves 0.01 (not the all-steps mean, 0.305): two ideas-sized calls fit.
    kernel_in_flight = {object(): calls.Call(("kernel", 1, 0), send=None, save=None)}
    assert calls._budget_room(search, kernel_in_flight) == 2
    ideas_in_flight = {object(): calls.Call(("ideas", 1), send=None, save=None, makes_kernel=False)}
    assert calls._budget_room(search, ideas_in_flight) == 1


def test_the_form_and_the_command_take_a_model_per_step(problem, client):
    client.force_login(d.user())
    page = client.get(reverse("search_new", args=[problem.code])).content.decode()
    assert all(f'id="id_{step}_model"' in page for step in ("ideas", "kernel", "repair"))
    form = SearchStartForm({"proposer": "anthropic", "device": "cpu", "rounds": 1, "parents_per_round": 1,
                            "ideas_per_parent": 1, "kernels_per_idea": 1, "bank_size": 0,
                            "repair_model": "claude-haiku-4-5"})
    assert form.is_valid(), form.errors
    fields = form.search_fields()
    assert (fields["ideas_model"], fields["kernel_model"], fields["repair_model"]) == ("", "", "claude-haiku-4-5")
    parser = SearchCommand().create_parser("manage.py", "search")
    options = vars(parser.parse_args(["softmax-cpu", "--ideas-model", "claude-opus-4-6", "--repair-model", "claude-haiku-4-5"]))
    assert (options["ideas_model"], options["kernel_model"], options["repair_model"]) == (
        "claude-opus-4-6", "", "claude-haiku-4-5")
