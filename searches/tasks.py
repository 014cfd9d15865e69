"""Thin django-q2 entry points: load ids, call the engine. Sandboxed work is not here: it runs
through evaluation jobs (evaluation/) on evaluation workers."""

from .engine import kick, loop


def advance_search(search_id: int) -> None:
    """Do the search's pending work (ideas, kernels, next round); see searches/engine/loop.py."""
    loop.advance(search_id)


def rekick_stalled_searches() -> int:
    """Periodic safety net, scheduled every minute (searches/schedules.py): advance active searches
    whose orchestration went quiet, e.g. a kick the broker refused while it was down."""
    return kick.rekick_stalled()
