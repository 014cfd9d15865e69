"""Is the system making progress: the banner every page shows when storage refuses writes or no
evaluator reports while jobs wait, and why a running search is stalled rather than running."""

import threading
import time
from datetime import timedelta

from django.db import DatabaseError
from django.db.models import Count, Max, OuterRef, Subquery
from django.utils import timezone

from evaluation.models import EvaluationJob, Worker
from evaluation.selectors import WORKER_SEEN_WITHIN
from lib.storage import record_fault, storage_error, storage_fault
from live import events as live_events
from searches.engine.kick import REKICK_MINUTES
from searches.engine.lease import LEASE_SECONDS
from searches.models import Device, Search

# A search with nothing leased, nothing to judge and no event for this long waits on a re-kick.
QUIET_AFTER = timedelta(seconds=LEASE_SECONDS + 60 * REKICK_MINUTES)
CACHE_SECONDS = 5.0  # the banner's heartbeat query runs at most this often per process

_cache_lock = threading.Lock()
_cached: tuple[float, list] = (float("-inf"), [])


def health_banner() -> dict | None:
    """{"storage": {"error", "since"} | None, "silent": [{"device", "label", "queued", "last_beat"}]}
    when something is wrong, else None. At most one query per CACHE_SECONDS in this process
    (and, while a storage fault stands, lib.storage's probe)."""
    storage = storage_fault()
    silent = _silent_devices_cached()
    if storage is None and not silent:
        return None
    return {"storage": storage, "silent": silent}


def _silent_devices_cached() -> list[dict]:
    global _cached
    now = time.monotonic()
    with _cache_lock:
        if now - _cached[0] < CACHE_SECONDS:
            return _cached[1]
        try:
            silent = silent_devices(now=timezone.now())
        except DatabaseError as exc:  # unreadable: the storage banner says why, from the next page on
            if not storage_error(exc):
                raise
            record_fault(storage_error(exc), where="the health banner")
            silent = []
        _cached = (now, silent)
        return silent


def forget_cached() -> None:
    global _cached
    _cached = (float("-inf"), [])


def silent_devices(*, now) -> list[dict]:
    """Devices with queued jobs and no evaluator heard from within WORKER_SEEN_WITHIN (the
    Workers page's test), each with its queue and its last heartbeat (None: never). One query."""
    last_beat = Worker.objects.filter(device=OuterRef("device")).order_by().values("device").annotate(
        last=Max("heartbeat_at")).values("last")
    rows = (EvaluationJob.objects.filter(status=EvaluationJob.Status.QUEUED).order_by().values("device")
            .annotate(queued=Count("id"), last_beat=Subquery(last_beat)))
    labels = dict(Device.choices)
    return [{"device": row["device"], "label": labels.get(row["device"], row["device"]), "queued": row["queued"],
             "last_beat": row["last_beat"]}
            for row in rows if row["last_beat"] is None or now - row["last_beat"] > WORKER_SEEN_WITHIN]


def search_stalls(*, searches: list[Search], now=None) -> dict[int, str]:
    """Why each active search is not advancing ("" when it is), keyed by id, and set on each as
    `stalled`. Three queries when any search is active, none otherwise:
    - its engine lease ran out (the orchestrator died, or cannot write): the storage fault when
      there is one, else it waits for the scheduler's re-kick;
    - its jobs wait and no evaluator of its device has reported;
    - nothing leased, nothing to judge, no event for QUIET_AFTER: it waits for the scheduler."""
    now = now or timezone.now()
    active = [search for search in searches if search.status in Search.ACTIVE]
    reasons = {search.id: "" for search in searches}
    if active:
        pending = _pending_jobs(active)
        beats = _last_beats({search.device for search in active})
        quiet = _last_events(active)
        fault = storage_fault()
        for search in active:
            reasons[search.id] = _stall_reason(search, now=now, pending=pending.get(search.id, 0),
                                               last_beat=beats.get(search.device), last_event=quiet.get(search.id),
                                               fault=fault)
    for search in searches:
        search.stalled = reasons[search.id]
    return reasons


def _stall_reason(search: Search, *, now, pending: int, last_beat, last_event, fault) -> str:
    until = search.engine_lease_until
    if until and until > now:
        return ""  # the engine holds it and renews: working
    if until and search.engine_lease_owner:
        if fault:
            return f"storage problem: {fault['error']}"
        return f"the engine stopped reporting at {timezone.localtime(until):%H:%M}; waiting for the scheduler"
    if pending:
        if last_beat is None:
            return f"no {search.get_device_display()} evaluator has reported yet"
        if now - last_beat > WORKER_SEEN_WITHIN:
            minutes = int((now - last_beat).total_seconds() // 60)
            return f"no {search.get_device_display()} evaluator has reported in {minutes} minutes"
        return ""  # queued for a live evaluator
    since = last_event or search.started_at or search.created_at
    if since and now - since > QUIET_AFTER:
        return f"storage problem: {fault['error']}" if fault else "waiting for the scheduler"
    return ""


def _pending_jobs(searches: list[Search]) -> dict[int, int]:
    rows = (EvaluationJob.objects.filter(kernel__search__in=searches, status__in=EvaluationJob.UNFINISHED).order_by()
            .values("kernel__search").annotate(n=Count("id")))
    return {row["kernel__search"]: row["n"] for row in rows}


def _last_beats(devices: set[str]) -> dict[str, object]:
    rows = Worker.objects.filter(device__in=devices).order_by().values("device").annotate(last=Max("heartbeat_at"))
    return {row["device"]: row["last"] for row in rows}


def _last_events(searches: list[Search]) -> dict[int, object]:
    """When each search's latest event was written: one index lookup per search (its last seq)."""
    return live_events.last_event_times(live_events.SEARCH, [s.id for s in searches])
