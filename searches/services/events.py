"""What searches tell open browsers: the payloads of their events, built here from the models and handed
to `live.events` as finished dicts (live numbers, stores and sends them; it knows nothing of searches).
Every call runs inside the transaction that makes the change it tells of.

Event kinds and payloads (documented for clients in docs/LIVE_UPDATES.md):
  search.status   {"status", "stop_reason", "current_round", "started_at", "finished_at", "elapsed_s"}
  search.progress {"candidates_evaluated", "tokens_in", "tokens_out", "cost_usd", "current_round"}
  round.started   {"round", "parents"}
  idea.created    idea_payload(idea)
  kernel.created  kernel_view(kernel)
  kernel.updated  kernel_view(kernel)   (status changes, verdicts, verification)
On a problem's stream (its work outside any search):
  problem.validation  {"validation_status", "validated_at"}
  kernel.updated      kernel_view(kernel)   (a kernel of no search)
  job.phase           job_phase_payload(job)
"""

from live import events as live

from ..models import Kernel, Search
from ..selectors.kernel_view import kernel_view


def publish(search_id: int, kind: str, payload: dict):
    return live.publish(search_id, kind, payload)


def publish_kernel(kernel: Kernel, kind: str = "kernel.updated", extra: dict | None = None):
    """The kernel's view on its search's stream, or on its problem's for a kernel of no search. `extra`: what
    the event adds to the view (a verdict's baseline)."""
    payload = {**kernel_view(kernel), **(extra or {})}
    if kernel.search_id:
        return live.publish(kernel.search_id, kind, payload)
    return live.publish_problem(kernel.problem_id, kind, payload)


def idea_payload(idea) -> dict:
    return {"id": idea.id, "round": idea.round, "title": idea.title, "description": idea.description,
            "origin": idea.origin, "parent_kernel_id": idea.parent_kernel_id}


def publish_job_phase(job) -> None:
    live.publish_problem(job.problem_id, "job.phase", job_phase_payload(job))


def job_phase_payload(job) -> dict:
    return {"job": job.id, "purpose": job.purpose, "kernel": str(job.kernel.code) if job.kernel_id else None,
            "status": job.status, "phase": job.phase, "phase_started_at": _iso(job.phase_started_at)}


def publish_validation(problem) -> None:
    live.publish_problem(problem.id, "problem.validation", {
        "validation_status": problem.validation_status, "validated_at": _iso(problem.validated_at)})


def publish_search_status(search: Search) -> None:
    # The times let an open page start (and stop) its elapsed clock without a reload.
    live.publish(search.id, "search.status", {
        "status": search.status, "stop_reason": search.stop_reason, "current_round": search.current_round,
        "started_at": _iso(search.started_at), "finished_at": _iso(search.finished_at),
        # Finished: the page shows the server's figure (browsers parse times to the millisecond only).
        "elapsed_s": ((search.finished_at - search.started_at).total_seconds()
                      if search.started_at and search.finished_at else None),
    })


def publish_search_progress(search_id: int) -> None:
    s = Search.objects.get(pk=search_id)
    live.publish(search_id, "search.progress", {
        "candidates_evaluated": s.candidates_evaluated, "tokens_in": s.tokens_in, "tokens_out": s.tokens_out,
        "cost_usd": s.cost_usd, "current_round": s.current_round,
    })


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None
