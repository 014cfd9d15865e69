"""One default-language rule (proposers/prompts.language_of): the language a proposer's prompt names and the
language the team's memory keys a search's ideas and lessons under are one, for every device and every
language a search may hold, a blank or an unknown one included."""

import itertools

import pytest

from proposers.prompts import DEFAULT_LANGUAGE, LANGUAGES, language_of
from searches.engine.context import problem_context
from searches.models import Device
from searches.selectors import search_key
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def test_the_prompt_and_the_memory_key_name_one_language():
    problem = d.problem()
    for device, language in itertools.product(Device.values, [*LANGUAGES, "", "fortran"]):
        search = d.search(problem=problem, device=device, language=language)
        expected = language if language in LANGUAGES else DEFAULT_LANGUAGE[device]
        assert search_key(search).language == language_of(problem_context(search)) == expected, (device, language)
