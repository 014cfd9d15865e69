"""Reads of the team's memory. Access is the caller's: every read takes the ids of the searches the
viewer may see (a queryset of ids from `searches`, or a list), and nothing from another search leaks."""

from django.db.models import Case, IntegerField, Value, When

from .keys import IdeaKey
from .models import Lesson

LESSONS_SHOWN = 5  # approved lessons one prompt carries at most


def lessons_for(*, key: IdeaKey, visible_search_ids, limit: int = LESSONS_SHOWN) -> list[Lesson]:
    """The approved lessons of searches on similar problems (IdeaKey.similar: same family, size class,
    device model and language, any technique), newest approval first."""
    return list(Lesson.objects.filter(
        status=Lesson.Status.APPROVED, family=key.family, shape_class=key.shape_class,
        device_model=key.device_model, language=key.language, search_id__in=visible_search_ids,
    ).order_by("-decided_at", "-id")[:limit])


def lessons_list(*, visible_search_ids, status: str = "", family: str = "", device_model: str = ""):
    """The lessons a person may see, filtered; proposed ones first (they wait for a decision)."""
    lessons = Lesson.objects.filter(search_id__in=visible_search_ids).select_related(
        "decided_by", "edited_by", "search", "kernel")
    if status:
        lessons = lessons.filter(status=status)
    if family:
        lessons = lessons.filter(family=family)
    if device_model:
        lessons = lessons.filter(device_model=device_model)
    waiting = Case(When(status=Lesson.Status.PROPOSED, then=Value(0)), default=Value(1), output_field=IntegerField())
    return lessons.order_by(waiting, "-created_at", "-id")


def lesson_filter_choices(*, visible_search_ids) -> dict:
    """The families and device models the visible lessons have, for the page's filters."""
    lessons = Lesson.objects.filter(search_id__in=visible_search_ids)
    return {"families": sorted(set(lessons.values_list("family", flat=True)) - {""}),
            "devices": sorted(set(lessons.values_list("device_model", flat=True)) - {""})}
