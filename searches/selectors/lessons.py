"""Reads for the pitfall ledger: which searches a person may learn from, the memory key of a search
or a kernel, and whether failures of a lesson's kind went down after it was approved."""

from django.core.paginator import Paginator
from django.db.models import Q

from memory import selectors as memory
from memory.keys import shape_class
from proposers.prompts import DEFAULT_LANGUAGE, LANGUAGES
from memory.models import Lesson
from searches.models import Device, Kernel, Search, Verdict

from .memory_scope import search_key, visible_search_ids

UNJUDGED = (Verdict.PENDING, Verdict.EVALUATING)
LESSONS_PER_PAGE = 50


def lessons_for_search(search: Search) -> list[Lesson]:
    """The approved lessons a search's prompts carry: similar problems, searches its owner may see."""
    return memory.lessons_for(key=search_key(search), visible_search_ids=visible_search_ids(search.created_by,
                                                                                             also=search))


def lesson_effect(lesson: Lesson, *, visible_search_ids) -> dict:
    """Failures of the lesson's kind (its verdict and reason code) among the judged kernels of searches on
    its key, before its approval and after it: {"before": {...}, "after": {...} or None, "went_down"}, each
    side with `failures`, `judged` and `rate` (None with nothing judged); `went_down` is None until both
    sides have a rate. A lesson not approved has no after."""
    approved = lesson.decided_at if lesson.status == Lesson.Status.APPROVED else None
    before, after = {"failures": 0, "judged": 0}, {"failures": 0, "judged": 0}
    for min_bytes, status, reason_code, evaluated_at in _judged(lesson, visible_search_ids):
        if shape_class(min_bytes) != lesson.shape_class:
            continue
        side = after if approved is not None and evaluated_at >= approved else before
        side["judged"] += 1
        side["failures"] += int(status == lesson.verdict and reason_code == lesson.reason_code)
    for side in (before, after):
        side["rate"] = side["failures"] / side["judged"] if side["judged"] else None
    if approved is None:
        return {"before": before, "after": None, "went_down": None}
    both = before["rate"] is not None and after["rate"] is not None
    return {"before": before, "after": after, "went_down": after["rate"] < before["rate"] if both else None}


def _judged(lesson: Lesson, visible_search_ids):
    """(min_bytes, status, reason_code, evaluated_at) of every kernel judged on the lesson's family, device
    and language: the model's own work (fork copies and duplicates carry another kernel's verdict)."""
    kernels = (Kernel.objects.filter(search_id__in=visible_search_ids, problem__family=lesson.family,
                                     evaluated_at__isnull=False, duplicate_of__isnull=True)
               .exclude(origin=Kernel.Origin.FORK).exclude(status__in=UNJUDGED)
               .exclude(status=Verdict.FAILED, reason_code=Kernel.CANCELLED))
    if lesson.device_model == "cpu":
        kernels = kernels.filter(search__device=Device.CPU)
    else:
        kernels = kernels.filter(search__device=Device.CUDA, device_name=lesson.device_model)
    language = Q(search__language=lesson.language)
    for device, default in DEFAULT_LANGUAGE.items():
        if default == lesson.language:
            language |= Q(search__language="", search__device=device)
    return kernels.filter(language).values_list("problem__min_bytes", "status", "reason_code", "evaluated_at")


def lessons_page(user, *, status: str = "", family: str = "", device_model: str = "", page=1) -> dict:
    """One page of the Lessons page: the lessons of searches the person may see, each with its effect
    (computed for the page's lessons only), the page, and the filters' choices."""
    visible = visible_search_ids(user)
    lessons = memory.lessons_list(visible_search_ids=visible, status=status, family=family,
                                  device_model=device_model)
    shown = Paginator(lessons, LESSONS_PER_PAGE).get_page(page)
    return {"rows": [{"lesson": lesson, "effect": lesson_effect(lesson, visible_search_ids=visible),
                      "language": LANGUAGES.get(lesson.language, (lesson.language,))[0]}
                     for lesson in shown.object_list],
            "page": shown, "choices": memory.lesson_filter_choices(visible_search_ids=visible)}


def lesson_for_user(user, code) -> Lesson | None:
    """The lesson with this code, where it comes from a search the person may see."""
    return Lesson.objects.filter(code=code, search_id__in=visible_search_ids(user)).first()
