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

Work that belongs to no search (a problem's validations, its hand-submitted kernels) is told on
the problem's own stream, `publish_problem`, under the same rules: numbered under the problem
row's lock in the writing transaction, pushed after commit, replayed on reconnect.
  problem.validation  {"validation_status", "validated_at"}
  kernel.updated      kernel_payload(kernel)   (a kernel of no search)
  job.phase           job_phase_payload(job)   (its validation's or a kernel of no search's run)
"""

from django.db import transaction
from django.db.models import Max

from searches.models import Kernel, Problem, ProblemEvent, Search, SearchEvent
from searches.selectors.kernels import speed_of_light

from . import fanout


def publish(search_id: int, kind: str, payload: dict) -> SearchEvent:
    return _append(Search, SearchEvent, "search_id", search_id, kind, payload)


def publish_problem(problem_id: int, kind: str, payload: dict) -> ProblemEvent:
    return _append(Problem, ProblemEvent, "problem_id", problem_id, kind, payload)


def publish_kernel(kernel, kind: str, payload: dict):
    """A kernel's event on its search's stream, or on its problem's for a kernel of no search."""
    if kernel.search_id:
        return publish(kernel.search_id, kind, payload)
    return publish_problem(kernel.problem_id, kind, payload)


def _append(owner, event_model, field: str, owner_id: int, kind: str, payload: dict):
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events.publish must run inside the transaction that makes the change")
    row = owner.objects.select_for_update().only("id", "last_event_seq").get(pk=owner_id)
    # The log's own last number too: a whole-row save() from a copy read earlier (a problem's edit)
    # may have written back an older counter.
    logged = event_model.objects.filter(**{field: owner_id}).aggregate(last=Max("seq"))["last"] or 0
    seq = max(row.last_event_seq, logged) + 1
    owner.objects.filter(pk=owner_id).update(last_event_seq=seq)
    event = event_model.objects.create(**{field: owner_id}, seq=seq, kind=kind, payload=payload)
    # robust: a failed push (already caught in fanout) must not stop the callbacks after it, e.g. the kick.
    transaction.on_commit(lambda: fanout.broadcast(event), robust=True)
    return event


def job_phase_payload(job) -> dict:
    return {"job": job.id, "purpose": job.purpose, "kernel": str(job.kernel.code) if job.kernel_id else None,
            "status": job.status, "phase": job.phase, "phase_started_at": _iso(job.phase_started_at)}


def publish_validation(problem) -> ProblemEvent:
    return publish_problem(problem.id, "problem.validation", {
        "validation_status": problem.validation_status, "validated_at": _iso(problem.validated_at)})


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
