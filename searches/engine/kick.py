"""How a search gets advanced: a django-q2 task after commit, or (the foreground `search`
command) a function of its own. Services, the engine and the evaluation worker kick; only the
task (searches.tasks) runs the loop.

A kick is asked for after commit, when the caller's write is done, so it never raises into the
caller: a kick the broker refused (Redis down) is logged, and the scheduled re-kick
(`searches.tasks.rekick_stalled_searches`, every minute; searches/schedules.py) advances the
search once the broker is back."""

import logging
import uuid

from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from searches.models import Search

log = logging.getLogger(__name__)
REKICK_MINUTES = 1  # how often the task queue re-kicks stalled searches (searches/schedules.py)


def queue_advance(search_id: int) -> None:
    """Queue the django-q2 task that runs `engine.loop.advance` (named, not imported: no circle)."""
    async_task("searches.tasks.advance_search", search_id, task_name=f"advance-search-{search_id}-{uuid.uuid4().hex[:8]}")


_kicker = queue_advance


def set_kicker(kicker) -> None:
    """Replace how a search is advanced (the foreground `search` command drives it in-process)."""
    global _kicker
    _kicker = kicker or queue_advance


def kick(search_id: int) -> None:
    """Ask for `advance(search_id)` after the current transaction commits."""
    transaction.on_commit(lambda: _kick_now(search_id), robust=True)


def _kick_now(search_id: int) -> bool:
    try:
        _kicker(search_id)
    except Exception as exc:  # e.g. the broker is down; the scheduled re-kick catches up
        log.warning("could not queue the next step of search %s (%s: %s); the re-kick every %d min retries it",
                    search_id, type(exc).__name__, exc, REKICK_MINUTES)
        return False
    return True


def rekick_stalled() -> int:
    """Safety net for lost tasks (a killed task worker, a lost broker message, a kick refused by a
    broker that was down): kick every active search whose engine lease is free or ran out. Extra
    kicks are harmless. Returns how many were kicked; stops at the first refusal (the broker is down)."""
    now = timezone.now()
    stalled = Search.objects.filter(status__in=Search.ACTIVE).exclude(engine_lease_until__gt=now)
    kicked = 0
    for search_id in list(stalled.values_list("id", flat=True)):
        if not _kick_now(search_id):
            break
        kicked += 1
    return kicked
