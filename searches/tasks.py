"""Thin django-q2 entry points: load ids, call services or the engine. Sandboxed work is not
here: it runs through evaluation jobs (searches/jobs.py) on evaluation workers."""

# === searches ===========================================================================


def advance_search(search_id: int) -> None:
    """Do the search's pending work (ideas, kernels, next round); see searches/engine.py."""
    from . import engine

    engine.advance(search_id)


def rekick_stalled_searches() -> int:
    """Periodic safety net: advance active searches whose orchestration went quiet."""
    from . import engine

    return engine.rekick_stalled()
