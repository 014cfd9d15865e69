"""The one scheduling policy for evaluation work: which jobs go first, and how much one person may
have waiting.

Priority classes (EvaluationJob.priority; evaluation/leases.py claims the highest class first, then
the oldest job):

- INTERACTIVE: a person waits on the page for it: their own problem's validation (new, edited, or
  validated again), a hand-submitted kernel, a rerun they asked for;
- SEARCH: a search's candidates and the reruns its engine asks for;
- BULK: many at once: the catalog's warm-up validations, a suite's validations (at import or on
  request) and sweeps of solution folders.

So a search's jobs keep their place against any amount of one person's bulk work, and a person's
interactive work, which goes ahead of searches, is bounded by the cap below.

Caps per person (settings): MAX_QUEUED_JOBS_PER_USER evaluation jobs they asked for
(EvaluationJob.requested_by) queued or running, and MAX_ACTIVE_SEARCHES_PER_USER searches queued or
running (searches are not evaluation's: the caller passes `active_searches`, which counts a person's).
A search's candidates are its engine's, not the person's: the search counts once, against the search
cap, and its knobs bound its work; "Search every problem" counts every search it starts.
Over a cap the work is refused with the count (OverQuota: a 429 page from the views); bulk paths
queue what fits and say what did not. The system itself (user None: the engine, the catalog,
commands run without --user) has no cap.
"""

from collections.abc import Callable
from enum import IntEnum

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from lib.ratelimit import OverQuota

from .models import EvaluationJob

# A person's searches queued or running, counted by the app that owns searches.
ActiveSearches = Callable[[object], int]


class Priority(IntEnum):
    # SEARCH is 0 and INTERACTIVE 10, the numbers jobs had before the classes were named, so jobs
    # queued before an upgrade keep their place.
    BULK = -10
    SEARCH = 0
    INTERACTIVE = 10


def _person(user):
    return user if getattr(user, "is_authenticated", False) else None


def queued_jobs(user) -> int:
    """Evaluation jobs the person asked for that have not finished (queued or running)."""
    return EvaluationJob.objects.filter(requested_by=user, status__in=EvaluationJob.UNFINISHED).count()


def _lock(user) -> None:
    """Serialise one person's checks and writes (PostgreSQL; SQLite serialises writes anyway), so two
    requests at once cannot both take the last place."""
    if transaction.get_connection().in_atomic_block:
        list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))


def job_room(user) -> int | None:
    """How many more jobs the person may queue now; None for the system (no cap)."""
    person = _person(user)
    if person is None:
        return None
    _lock(person)
    return max(0, settings.MAX_QUEUED_JOBS_PER_USER - queued_jobs(person))


def search_room(user, active_searches: ActiveSearches) -> int | None:
    """How many more searches the person may start now; None for the system (no cap)."""
    person = _person(user)
    if person is None:
        return None
    _lock(person)
    return max(0, settings.MAX_ACTIVE_SEARCHES_PER_USER - active_searches(person))


def jobs_refusal(user, asked: int = 1) -> OverQuota:
    queued, cap = queued_jobs(user), settings.MAX_QUEUED_JOBS_PER_USER
    more = f" and this asks for {asked} more" if asked > 1 else ""
    return OverQuota(
        f"You have {queued} evaluation job{'s' if queued != 1 else ''} queued or running{more}; the cap is {cap} "
        "per person. Nothing was queued: try again when some have finished (the Workers page shows the queue), "
        "or ask an administrator to raise MAX_QUEUED_JOBS_PER_USER.", used=queued, cap=cap)


def searches_refusal(user, active_searches: ActiveSearches) -> OverQuota:
    active, cap = active_searches(user), settings.MAX_ACTIVE_SEARCHES_PER_USER
    return OverQuota(
        f"You have {active} search{'es' if active != 1 else ''} queued or running; the cap is {cap} per person. "
        "Start this one when one of them has finished, or pause or cancel one.", used=active, cap=cap)


def require_job_room(user, asked: int = 1) -> None:
    """Raise OverQuota unless the person may queue `asked` more jobs."""
    room = job_room(user)
    if room is not None and room < asked:
        raise jobs_refusal(_person(user), asked)


def require_search_room(user, active_searches: ActiveSearches) -> None:
    """Raise OverQuota unless the person may start one more search."""
    room = search_room(user, active_searches)
    if room is not None and room < 1:
        raise searches_refusal(_person(user), active_searches)


def usage(user, active_searches: ActiveSearches) -> dict:
    """What a person has waiting, against the caps (the 429 page shows it)."""
    person = _person(user)
    if person is None:
        return {}
    return {"jobs": queued_jobs(person), "job_cap": settings.MAX_QUEUED_JOBS_PER_USER,
            "searches": active_searches(person), "search_cap": settings.MAX_ACTIVE_SEARCHES_PER_USER}
