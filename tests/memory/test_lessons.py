"""memory.services on lessons: one line, capped; a repeat in the same words is not a second row; a
person's approval, edit and rejection are recorded with who and when."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from memory import selectors, services
from memory.keys import IdeaKey
from memory.models import LESSON_CHARS, Lesson
from searches import services as search_services
from tests.searches.test_engine import kicks, problem  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db
KEY = IdeaKey("softmax", "small", "cpu", "c", "warp-shuffle")


@pytest.fixture
def search(problem):
    return search_services.search_start(problem=problem, user=None, proposer="playbook", device="cpu", rounds=1,
                                        parents_per_round=1, ideas_per_parent=1, kernels_per_idea=1)


def propose(search, text="Offsets overflow exp().", key=KEY):
    return services.lesson_propose(text=text, key=key, search_id=search.id, kernel_id=None, verdict="incorrect",
                                   reason_code="offset_inputs")


def test_a_lesson_is_one_line_capped_keyed_and_its_repeat_is_not_a_second_row(search):
    lesson = propose(search, "  Offsets\n overflow   exp(). " + "x" * 400)
    assert lesson.text.startswith("Offsets overflow exp(). xx") and len(lesson.text) == LESSON_CHARS
    assert (lesson.status, lesson.technique, lesson.family, lesson.device_model) == (
        "proposed", "warp-reductions", "softmax", "cpu")
    assert propose(search, lesson.text.upper()) is None and propose(search, " \n ") is None
    assert propose(search, lesson.text, key=IdeaKey("softmax", "small", "NVIDIA H200", "c", "other")) is not None
    assert Lesson.objects.count() == 2


def test_approve_edit_and_reject_record_the_person_and_only_approved_ones_are_selected(search):
    ada = get_user_model().objects.create_user("ada")
    lesson = propose(search)
    lesson = services.lesson_edit(lesson=lesson, user=ada, text="Subtract the row max first.")
    assert (lesson.status, lesson.edited_text, lesson.edited_by, lesson.decided_by) == (
        "proposed", "Subtract the row max first.", ada, None)
    visible = [search.id]
    assert selectors.lessons_for(key=KEY, visible_search_ids=visible) == []
    lesson = services.lesson_approve(lesson=lesson, user=ada)
    assert (lesson.status, lesson.decided_by, lesson.shown_text) == ("approved", ada, "Subtract the row max first.")
    assert lesson.decided_at is not None
    assert selectors.lessons_for(key=KEY, visible_search_ids=visible) == [lesson]
    assert selectors.lessons_for(key=KEY, visible_search_ids=[]) == []  # from a search the caller may not see
    with pytest.raises(ValidationError, match="reject it instead"):
        services.lesson_edit(lesson=lesson, user=ada, text="  ")
    lesson = services.lesson_reject(lesson=lesson, user=ada)
    assert (lesson.status, lesson.decided_by) == ("rejected", ada)
    assert selectors.lessons_for(key=KEY, visible_search_ids=visible) == []
    services.lessons_mark_shown(lesson_ids=[lesson.id])
    lesson.refresh_from_db()
    assert lesson.shown_count == 1 and lesson.last_shown_at is not None
