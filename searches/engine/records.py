"""How the engine saves its work: every write happens under the search row's lock, in the
transaction that publishes its event."""

import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from evaluation import queue
from evaluation.models import EvaluationJob
from searches.services import events
from memory import services as memory
from proposers.base import Exchange, KernelProposal, ProposerError
from proposers.pricing import call_cost
from proposers.registry import capabilities
from searches.models import Kernel, ProposerCall, Search, Verdict
from searches.selectors.memory_scope import search_key
from searches.services import kernels as kernel_services

from . import dedup

log = logging.getLogger(__name__)

# Kernels the engine made itself (budgets count these; user kernels and fork copies are free).
GENERATED = (Kernel.Origin.SEED, Kernel.Origin.LLM, Kernel.Origin.PLAYBOOK, Kernel.Origin.REPAIR)


def candidates_spent(search: Search) -> int:
    """What the candidates budget has paid for: the engine's kernels and agent mode's tool runs (each a
    runner job as a candidate is)."""
    return Kernel.objects.filter(search=search, origin__in=GENERATED).count() + tool_runs(search)


def tool_runs(search: Search) -> int:
    return EvaluationJob.objects.filter(search=search, purpose=EvaluationJob.Purpose.TOOL).count()


def lock_search(search_id: int) -> Search:
    return Search.objects.select_for_update().get(pk=search_id)


def save_plan(search: Search, round_number: int, plan: dict) -> None:
    search.round_parents = {**(search.round_parents or {}), str(round_number): plan}
    search.save(update_fields=["round_parents"])


def propose_lesson(search: Search, broken: Kernel, text: str) -> None:
    """A repair's one-line lesson, proposed to the team under the broken kernel's key: a person decides
    on the Lessons page whether it ever reaches a prompt."""
    if text.strip():
        memory.lesson_propose(text=text, key=search_key(search, kernel=broken), search_id=search.id,
                              kernel_id=broken.id, verdict=broken.status, reason_code=broken.reason_code)


def save_kernel(search: Search, proposal: KernelProposal, *, call, origin, round, name, idea=None, parent=None,
                variant=None, repair_of=None, counters: bool = False) -> Kernel:
    """A candidate: a Kernel row, plus its evaluation job when it has code (`counters`: one that also reads
    the GPU's counters if the kernel is correct). Inside a transaction."""
    source = proposal.source or ""
    status, reason = Verdict.PENDING, ""
    if not source.strip():
        status, reason = Verdict.NO_CODE, proposal.note or "the proposer's reply had no usable code"
    elif len(source.encode()) > settings.KERNEL_SOURCE_MAX_BYTES:
        status, reason = Verdict.REJECTED, f"the kernel source is larger than {settings.KERNEL_SOURCE_MAX_BYTES} bytes"
    digest = dedup.source_hash(source) if source.strip() else ""
    twin = dedup.judged_twin(search.id, digest) if status == Verdict.PENDING else None
    verdict = {**twin.verdict(), "evaluated_at": timezone.now()} if twin else {"status": status, "reason": reason}
    try:
        with transaction.atomic():
            kernel = Kernel.objects.create(
                problem_id=search.problem_id, search=search, idea=idea, parent=parent, repair_of=repair_of,
                round=round, variant=variant, name=name[:200], source=source, origin=origin, call=call,
                source_hash=digest, duplicate_of=twin, analysis=proposal.analysis or {}, **verdict,
            )
    except IntegrityError:
        raise RuntimeError("duplicate candidate: the engine's idempotency check was bypassed")
    if kernel.status == Verdict.PENDING:
        queue.enqueue_kernel(kernel, options={**search.job_options(), **({"counters": True} if counters else {})})
    events.publish_kernel(kernel, "kernel.created")
    return kernel


def record_call(search: Search, purpose: str, exchange: Exchange, *, error: str = "") -> ProposerCall:
    """Store one proposer call and add its tokens and cost to the search. Inside a transaction."""
    exchange = exchange or Exchange()
    cost = call_cost(exchange)
    call = ProposerCall.objects.create(
        search=search, purpose=purpose, proposer=search.proposer,
        model=exchange.model or (search.step_model(purpose) if search.capabilities.takes_model else ""),
        prompt=exchange.prompt, reply=exchange.reply, ok=not error, error=error,
        input_tokens=exchange.input_tokens, output_tokens=exchange.output_tokens,
        cache_read_tokens=exchange.cache_read_tokens, cache_write_tokens=exchange.cache_write_tokens,
        cost_usd=cost, duration_s=exchange.duration_s, no_tool_replies=exchange.no_tool_replies,
        tool_calls=exchange.tool_calls,
    )
    tokens_in = exchange.input_tokens + exchange.cache_read_tokens + exchange.cache_write_tokens
    if tokens_in or exchange.output_tokens or cost:
        Search.objects.filter(pk=search.pk).update(
            tokens_in=F("tokens_in") + tokens_in, tokens_out=F("tokens_out") + exchange.output_tokens,
            cost_usd=F("cost_usd") + cost,
        )
        events.publish_search_progress(search.pk)
    return call


def set_status(search_id: int, status: str, stop_reason: str | None = None) -> None:
    with transaction.atomic():
        search = lock_search(search_id)
        search.status = status
        fields = ["status"]
        if stop_reason is not None:
            search.stop_reason = stop_reason
            fields.append("stop_reason")
        if status == Search.Status.RUNNING and not search.started_at:
            search.started_at = timezone.now()
            fields.append("started_at")
        if status in Search.FINISHED:
            search.finished_at = timezone.now()
            fields.append("finished_at")
        search.save(update_fields=fields)
        events.publish_search_status(search)


def finish(search_id: int, status: str, stop_reason: str) -> None:
    with transaction.atomic():
        set_status(search_id, status, stop_reason)
        if status == Search.Status.COMPLETED:
            _recheck_elites(search_id)


def _recheck_elites(search_id: int) -> None:
    """Queue a verified rerun (fresh process, new seed) of the search's fastest correct kernels,
    quarantined ones included: their badge, or their way into the ranking, depends on it. On a GPU the
    rerun also reads Nsight Compute's counters for the winners' pages, where the host allows them."""
    elites = (Kernel.objects.filter(search_id=search_id, status=Verdict.CORRECT, median_ms__isnull=False)
              .exclude(origin=Kernel.Origin.FORK).order_by("median_ms")[:settings.ELITE_RECHECKS])
    for kernel in elites:
        kernel_services.kernel_request_rerun(kernel=kernel, user=None, counters=True)


def fail_search(search_id: int, reason: str) -> None:
    """End the search as failed with `reason`; the page and `manage.py search` show it."""
    try:
        set_status(search_id, Search.Status.FAILED, reason[:2000])
    except Exception:
        log.exception("search %s: could not record the failure", search_id)


def proposer_gave_up(search: Search, purpose: str, exc: ProposerError, what: str) -> None:
    """The proposer could not (after its own retries): keep the call, pause with the reason.
    Nothing is lost; resuming tries again (the playbook's search ends instead)."""
    with transaction.atomic():
        lock_search(search.id)
        record_call(search, purpose, exc.exchange or Exchange(), error=str(exc) or "failed")
    if not playbook_cannot_continue(search.id, exc):
        set_status(search.id, Search.Status.PAUSED,
                   f"paused: the proposer could not {what} ({exc}). Resume the search to try again.")


def playbook_cannot_continue(search_id: int, exc: ProposerError) -> bool:
    """End a playbook search its proposer cannot continue, with the reason and a path that exists;
    False for the API proposer, which may recover (a key set, a quota renewed) and pauses. The
    playbook is a fixed list: resuming would fail the same way."""
    proposer = Search.objects.filter(pk=search_id).values_list("proposer", flat=True).first()
    if proposer is None or not capabilities(proposer).fixed:
        return False
    finish(search_id, Search.Status.COMPLETED,
           f"not supported by the built-in kernels: {exc} Submit a kernel from the problem's page, or set "
           "ANTHROPIC_API_KEY for the task queue and start an Anthropic search.")
    return True
