"""Writes to the team's memory: a lesson proposed after a failure, a person's decision on it, and
the count of prompts it entered. Callers in `searches` pass the key and the ids; nothing here reads
a search."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .keys import IdeaKey, technique_of
from .models import LESSON_CHARS, Lesson


def one_line(text: str) -> str:
    """A lesson as stored: whitespace (newlines included) collapsed to single spaces, at most LESSON_CHARS."""
    return " ".join(str(text or "").split())[:LESSON_CHARS]


def lesson_propose(*, text: str, key: IdeaKey, search_id: int, kernel_id: int | None, verdict: str,
                   reason_code: str = "") -> Lesson | None:
    """A model's lesson, proposed for a person to judge. None for a blank one, and for one its key
    already holds in the same words, whatever its status (a model repeats itself across repairs; one
    row is enough, and a person's rejection stands)."""
    text = one_line(text)
    if not text:
        return None
    fields = dict(family=key.family, shape_class=key.shape_class, device_model=key.device_model,
                  language=key.language)
    if Lesson.objects.filter(text__iexact=text, **fields).exists():
        return None
    return Lesson.objects.create(text=text, technique=technique_of(key.technique), verdict=verdict[:16],
                                 reason_code=(reason_code or "")[:32], search_id=search_id, kernel_id=kernel_id,
                                 **fields)


@transaction.atomic
def lesson_approve(*, lesson: Lesson, user, text: str | None = None) -> Lesson:
    """Approve the lesson, in the person's words where they reworded it: from now on it enters the
    prompts of searches its key matches."""
    lesson = Lesson.objects.select_for_update().get(pk=lesson.pk)
    if text is not None:
        _edit(lesson, user, text)
    lesson.status, lesson.decided_by, lesson.decided_at = Lesson.Status.APPROVED, user, timezone.now()
    lesson.save()
    return lesson


@transaction.atomic
def lesson_reject(*, lesson: Lesson, user) -> Lesson:
    """Reject the lesson: it never enters a prompt (an approved one leaves them)."""
    lesson = Lesson.objects.select_for_update().get(pk=lesson.pk)
    lesson.status, lesson.decided_by, lesson.decided_at = Lesson.Status.REJECTED, user, timezone.now()
    lesson.save()
    return lesson


@transaction.atomic
def lesson_edit(*, lesson: Lesson, user, text: str) -> Lesson:
    """Reword the lesson, keeping its status (an approved lesson enters prompts in the new words)."""
    lesson = Lesson.objects.select_for_update().get(pk=lesson.pk)
    _edit(lesson, user, text)
    lesson.save()
    return lesson


def _edit(lesson: Lesson, user, text: str) -> None:
    text = one_line(text)
    if not text:
        raise ValidationError("A lesson needs words: reject it instead of emptying it.", code="blank")
    if text != lesson.shown_text:
        lesson.edited_text = "" if text == lesson.text else text
        lesson.edited_by, lesson.edited_at = user, timezone.now()


def lessons_mark_shown(*, lesson_ids: list[int]) -> None:
    """The lessons entered one more prompt."""
    if lesson_ids:
        Lesson.objects.filter(pk__in=lesson_ids).update(shown_count=F("shown_count") + 1,
                                                        last_shown_at=timezone.now())
