"""How a search gets advanced: a django-q2 task after commit, or (the foreground `search`
command) a function of its own. Services, the engine and the evaluation worker kick; only the
task (searches.tasks) runs the loop."""

import uuid

from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from searches.models import Search


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
    transaction.on_commit(lambda: _kicker(search_id))


def rekick_stalled() -> int:
    """Safety net for lost tasks (a killed task worker, a lost broker message): kick every active
    search whose engine lease is free or ran out. Extra kicks are harmless."""
    now = timezone.now()
    stalled = Search.objects.filter(status__in=Search.ACTIVE).exclude(engine_lease_until__gt=now)
    ids = list(stalled.values_list("id", flat=True))
    for search_id in ids:
        _kicker(search_id)
    return len(ids)
