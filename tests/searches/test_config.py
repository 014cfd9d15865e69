"""The search settings are written once (searches/config.py): every setting is a `Search` field with
the same default, a field of the start form with the same label, help and limits, and an option of
`manage.py search` (and a fork may change it); a value outside a setting's limits is refused in the
setting's own words by the form, the command and the service alike."""

import argparse
import re

import pytest
from django import forms
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import CommandError
from django.urls import reverse

from searches import services
from searches.config import SEARCH_CONFIG as CONFIG, SearchConfig, Setting
from searches.forms import SearchForkForm, SearchStartForm
from searches.management.commands.search import Command as SearchCommand
from searches.models import Search

from .test_engine import problem  # noqa: F401  (fixture)

NUMBERS = [s for s in CONFIG if s.type in (int, float)]
VALID = {"proposer": "playbook", "device": "cpu", "rounds": 2, "parents_per_round": 1, "ideas_per_parent": 1,
         "kernels_per_idea": 1, "bank_size": 0}


def parser_of(command):
    return command.create_parser("manage.py", "search")


def actions(parser) -> dict:
    return {action.dest: action for action in parser._actions}


def too_big(setting: Setting):
    return (setting.high if setting.high is not None else 0) + (1 if setting.type is int else 0.5)


def too_small(setting: Setting):
    return setting.low - (1 if setting.type is int else 0.005)


@pytest.mark.parametrize("setting", list(CONFIG), ids=CONFIG.names)
def test_every_setting_is_a_model_field_with_its_default(setting):
    field = Search._meta.get_field(setting.name)
    assert field.get_default() == setting.default
    assert field.null == (setting.default is None)
    if setting.max_length:
        assert field.max_length == setting.max_length
    for value, _ in setting.choices if setting.type is not list else ():  # its choices fit the column
        assert len(value) <= field.max_length


@pytest.mark.parametrize("setting", list(CONFIG), ids=CONFIG.names)
def test_every_setting_is_a_form_field_with_its_label_help_and_limits(setting):
    field = SearchStartForm.base_fields[setting.name]
    assert (field.label, field.help_text, field.required) == (
        setting.label, setting.help, setting.required and setting.type is not bool)
    shown = setting.type is not bool and setting.default not in (None, "")
    assert field.initial == (setting.default if shown else None)
    if setting.type in (int, float) and not setting.choices:
        assert isinstance(field, forms.IntegerField if setting.type is int else forms.FloatField)
        assert (field.min_value, field.max_value) == (setting.low, setting.high)
    elif setting.type is bool:
        assert isinstance(field, forms.BooleanField)
    elif setting.choices:
        assert list(field.choices) == list(setting.choices)
    elif isinstance(field, forms.ChoiceField):  # proposer, device: the model field's choices
        assert list(field.choices) == list(Search._meta.get_field(setting.name).choices)
    else:
        assert field.max_length == setting.max_length
    # A fork may change every setting; its form offers all of them but the name and the device.
    assert setting.name in services.SEARCH_FORK_OVERRIDES
    assert (setting.name in SearchForkForm.base_fields) == (setting.name not in ("name", "device"))


@pytest.mark.parametrize("setting", list(CONFIG), ids=CONFIG.names)
def test_every_setting_is_an_option_of_the_search_command(setting):
    action = actions(parser_of(SearchCommand()))[setting.name]
    assert action.option_strings == list(setting.flags)
    overridden = SearchCommand.DEFAULT_OVERRIDES
    assert action.default == overridden.get(setting.name, setting.default)


def test_the_command_overrides_only_the_defaults_it_takes_from_the_problem_and_the_environment():
    assert SearchCommand.DEFAULT_OVERRIDES == {"device": None, "proposer": None}
    options = vars(parser_of(SearchCommand()).parse_args(["softmax-cpu"]))
    assert (options["rounds"], options["parents_per_round"], options["sol_stop_percent"], options["private"]) == (
        5, 2, 0, False)
    options = vars(parser_of(SearchCommand()).parse_args(
        ["softmax-cpu", "--parents", "3", "--kernels-per-idea", "4", "--max-cost", "1.5", "--sol-stop-percent", "90",
         "--private", "--thinking", "2048"]))
    assert (options["parents_per_round"], options["kernels_per_idea"], options["max_cost_usd"],
            options["sol_stop_percent"], options["private"], options["thinking_tokens"]) == (3, 4, 1.5, 90, True, 2048)


@pytest.mark.parametrize("setting", NUMBERS, ids=[s.name for s in NUMBERS])
def test_a_value_outside_the_limits_gets_the_settings_message_in_the_form_and_the_command(setting):
    bad = [too_small(setting)] + ([too_big(setting)] if setting.high is not None else [])
    for value in bad:
        form = SearchStartForm({**VALID, setting.name: value})
        assert not form.is_valid()
        assert form.errors[setting.name] == [setting.limits + "."]
        with pytest.raises(CommandError, match=f"argument {setting.flags[0]}.*{re.escape(setting.limits)}"):
            parser_of(SearchCommand()).parse_args(["softmax-cpu", setting.flags[0], str(value)])
    form = SearchStartForm({**VALID, setting.name: "many"})
    assert not form.is_valid() and form.errors[setting.name] == [setting.limits + "."]
    with pytest.raises(CommandError, match=re.escape(setting.limits)):
        parser_of(SearchCommand()).parse_args(["softmax-cpu", setting.flags[0], "many"])


@pytest.mark.django_db
@pytest.mark.parametrize("name, value", [("rounds", 51), ("agent_tool_calls", 0), ("sol_stop_percent", 101),
                                         ("stop_points_per_dollar", -1.0), ("max_cost_usd", 0.001),
                                         ("max_tokens", 0), ("thinking_tokens", 100)])
def test_the_service_refuses_with_the_same_words(name, value):
    setting = CONFIG[name]
    with pytest.raises(ValidationError) as refused:
        services.search_start(problem=None, user=None, proposer="playbook", device="cpu", **{name: value})
    assert refused.value.code == name
    assert (setting.least_limit if name == "thinking_tokens" else setting.limits) in refused.value.messages[0]
    assert Search.objects.count() == 0


def test_a_thinking_budget_is_0_or_at_least_the_apis_least_everywhere():
    setting = CONFIG.thinking_tokens
    form = SearchStartForm({**VALID, "thinking_tokens": 100})
    assert not form.is_valid() and form.errors["thinking_tokens"] == [setting.least_limit + "."]
    assert SearchStartForm({**VALID, "thinking_tokens": 0}).is_valid()
    with pytest.raises(CommandError, match=re.escape(setting.least_limit)):
        parser_of(SearchCommand()).parse_args(["softmax-cpu", "--thinking", "100"])


def test_a_choice_outside_the_list_is_refused_in_the_settings_words():
    setting = CONFIG.effort
    form = SearchStartForm({**VALID, "effort": "extreme"})
    assert not form.is_valid() and form.errors["effort"] == [setting.limits + "."]
    with pytest.raises(CommandError, match="Unknown effort 'extreme'"):
        parser_of(SearchCommand()).parse_args(["softmax-cpu", "--effort", "extreme"])


def test_an_empty_optional_field_means_the_settings_default():
    form = SearchStartForm({**VALID, "prior_weight": "", "agent_tool_calls": "", "max_tokens": ""})
    assert form.is_valid(), form.errors
    fields = form.search_fields()
    assert set(fields) == set(CONFIG.names)
    for setting in CONFIG:
        if setting.name not in VALID:
            assert fields[setting.name] == setting.default, setting.name


def test_each_setting_is_named_for_its_field_and_a_setting_once():
    with pytest.raises(ValueError, match="named"):
        SearchConfig(rounds=Setting("round", 5, "Rounds"))
    assert len(set(CONFIG.names)) == len(CONFIG.names)
    with pytest.raises(TypeError, match="not search settings: colour"):
        CONFIG.complete({"colour": "red"})
    with pytest.raises(argparse.ArgumentTypeError, match="from 1 to 50"):
        CONFIG.rounds.parse("0")


@pytest.mark.django_db
def test_the_start_page_shows_each_setting_once_and_the_llm_ones_for_proposers_that_take_a_model(problem, client):
    client.force_login(User.objects.create_user("ada"))
    page = client.get(reverse("search_new", args=[problem.code])).content.decode()
    assert '<div class="llm-knobs" data-proposers="anthropic">' in page  # static/js/search_form.js reads it
    for setting in CONFIG:  # a list setting is a checkbox per choice
        once = len(setting.choices) if setting.type is list else 1
        assert page.count(f'name="{setting.name}"') == once, setting.name
    assert 'name="thinking_tokens" value="0"' in page and 'name="rounds" value="5"' in page


@pytest.mark.django_db
def test_a_list_setting_is_checked_in_the_same_words_by_the_form_the_command_and_the_service(problem):  # noqa: F811
    setting = CONFIG.baselines
    assert setting.limits == "Baselines are among reduce-overhead, max-autotune, cudagraph."
    form = SearchStartForm({**VALID, "baselines": ["cudagraph", "bogus"]})
    assert not form.is_valid() and form.errors["baselines"] == [setting.limits]
    form = SearchStartForm({**VALID, "baselines": ["cudagraph", "max-autotune"]})
    assert form.is_valid(), form.errors
    options = vars(parser_of(SearchCommand()).parse_args(["softmax-cpu", "--baselines", "cudagraph,max-autotune"]))
    assert options["baselines"] == ["cudagraph", "max-autotune"]
    with pytest.raises(CommandError, match=re.escape(setting.limits)):
        parser_of(SearchCommand()).parse_args(["softmax-cpu", "--baselines", "cudagraph,bogus"])
    with pytest.raises(ValidationError) as refused:
        services.search_start(problem=problem, user=None, proposer="playbook", device="cpu", baselines=["bogus"])
    assert refused.value.code == "baselines" and refused.value.messages == [setting.limits]
    search = services.search_start(problem=problem, user=None, proposer="playbook", device="cpu",
                                   baselines=["cudagraph", "max-autotune", "cudagraph"])
    assert search.baselines == ["max-autotune", "cudagraph"]  # the runner's order, each once
    assert search.job_options() == {"allow_library": False, "baselines": ["max-autotune", "cudagraph"]}
