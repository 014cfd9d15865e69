"""Live updates: the one place that knows how a search's events are written and travel.

`publish` must run inside the transaction that makes the change it describes. It locks the
search row, takes the next sequence number and appends a SearchEvent, so numbers follow
commit order. After commit the event is pushed to open browsers (see `live.fanout`);
a browser never hears of a row the database does not have. A push that fails (Redis down) is
logged, never raised: the write is done and viewers get the event by replay.

Event kinds and payloads (documented for clients in docs/LIVE_UPDATES.md):
  search.status   {"status", "stop_reason", "current_round", "started_at", "finished_at", "elapsed_s"}
  search.progress {"candidates_evaluated", "tokens_in", "tokens_out", "cost_usd", "current_round"}
  round.started   {"round"}
  idea.created    idea_payload(idea)
  kernel.created  kernel_payload(kernel)
  kernel.updated  kernel_payload(kernel)   (status changes, verdicts, verification)
"""

from django.db import transaction

from searches.models import Kernel, Search, SearchEvent
from searches.selectors.kernels import speed_of_light

from . import fanout


def publish(search_id: int, kind: str, payload: dict) -> SearchEvent:
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events.publish must run inside the transaction that makes the change")
    search = Search.objects.select_for_update().only("id", "last_event_seq").get(pk=search_id)
    seq = search.last_event_seq + 1
    Search.objects.filter(pk=search_id).update(last_event_seq=seq)
    event = SearchEvent.objects.create(search_id=search_id, seq=seq, kind=kind, payload=payload)
    # robust: a failed push (already caught in fanout) must not stop the callbacks after it, e.g. the kick.
    transaction.on_commit(lambda: fanout.broadcast(event), robust=True)
    return event


def idea_payload(idea) -> dict:
    return {
        "id": idea.id,
        "round": idea.round,
        "title": idea.title,
        "description": idea.description,
        "origin": idea.origin,
        "parent_kernel_id": idea.parent_kernel_id,
    }


def kernel_payload(kernel) -> dict:
    return {
        "id": kernel.id,
        "code": str(kernel.code),
        "round": kernel.round,
        "name": kernel.name,
        "origin": kernel.origin,
        "idea_id": kernel.idea_id,
        "parent_id": kernel.parent_id,
        "repair_of_id": kernel.repair_of_id,  # the lineage view hangs a repair under what it repairs
        "status": Kernel.shown(kernel.status, kernel.reason_code),
        "reason": kernel.reason[:500],
        "quarantined": kernel.quarantined,
        "median_ms": kernel.median_ms,
        "speedup_vs_eager": kernel.speedup_vs_eager,
        "speedup_vs_compile": kernel.speedup_vs_compile,
        "precision": kernel.precision,
        "speed_of_light": (speed_of_light(kernel.problem, kernel) or {}).get("fraction"),
        "verified": kernel.verified,
        "approved": kernel.approved_at is not None,
    }


def publish_search_status(search: Search) -> SearchEvent:
    # The times let an open page start (and stop) its elapsed clock without a reload.
    return publish(search.id, "search.status", {
        "status": search.status, "stop_reason": search.stop_reason, "current_round": search.current_round,
        "started_at": _iso(search.started_at), "finished_at": _iso(search.finished_at),
        # Finished: the page shows the server's figure (browsers parse times to the millisecond only).
        "elapsed_s": ((search.finished_at - search.started_at).total_seconds()
                      if search.started_at and search.finished_at else None),
    })


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None


def publish_search_progress(search_id: int) -> SearchEvent:
    s = Search.objects.get(pk=search_id)
    return publish(search_id, "search.progress", {
        "candidates_evaluated": s.candidates_evaluated, "tokens_in": s.tokens_in, "tokens_out": s.tokens_out,
        "cost_usd": s.cost_usd, "current_round": s.current_round,
    })
