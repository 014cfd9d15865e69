"""Storage faults made visible: a database that refuses writes (read-only, full disk, I/O error)
answers a page with a 503 that names the real error, not a bare 500, and every page says so in a
banner until writes pass again.

A fault is what this process saw: a request whose write failed (`StorageFaultMiddleware` records
it). It ends when a later write passes (the middleware watches writes while a fault stands), when a
write probe passes for a fault the probe can see (read-only; the probe runs only while a fault
stands, at most every PROBE_SECONDS), or FAULT_SHOWN_FOR after it was last seen. A page without
a fault costs nothing here."""

import logging
import threading
import time
from datetime import datetime, timedelta

from django.db import DatabaseError, OperationalError, connection, transaction
from django.http import HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone

log = logging.getLogger(__name__)

PROBE_SECONDS = 5.0  # while a fault stands, a page costs at most one probe per process per this many seconds
FAULT_SHOWN_FOR = timedelta(seconds=60)  # after the last failed write, unless a write passes sooner
# The text of errors that are the storage's, not the query's (SQLite, PostgreSQL, the OS).
STORAGE_WORDS = ("readonly", "read-only", "read only", "disk", "full", "no space", "i/o", "could not extend",
                 "could not write", "could not open", "unable to open", "out of memory")
BUSY = "database is locked"  # contention, not a fault: a 503 for that request, no banner


def storage_error(exc: BaseException) -> str:
    """The real text of a storage error, or "" when `exc` is not one (a constraint, a bad query)."""
    if not isinstance(exc, DatabaseError):
        return ""
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, OperationalError) or any(word in text.lower() for word in STORAGE_WORDS):
        return text
    return ""


class _Fault:
    """The storage fault this process saw last: its text, since when, when last seen."""

    def __init__(self):
        self.lock = threading.Lock()
        self.error = ""
        self.since: datetime | None = None
        self.last_seen: datetime | None = None
        self.probed_at = 0.0  # time.monotonic() of the last probe

    def record(self, error: str) -> None:
        now = timezone.now()
        with self.lock:
            if not self.error:
                self.since = now
            self.error, self.last_seen = error, now

    def clear(self) -> None:
        with self.lock:
            self.error, self.since, self.last_seen = "", None, None


_fault = _Fault()


def record_fault(error: str, *, where: str = "") -> None:
    """Remember a failed write (and log it with its real text); a busy database is logged only."""
    log.error("storage fault%s: %s", f" ({where})" if where else "", error)
    if BUSY not in error:
        _fault.record(error)


def forget_fault() -> None:
    """Drop what this process remembers."""
    _fault.clear()
    _fault.probed_at = 0.0


def probe_write() -> str | None:
    """Try a write that changes no row, in its own transaction or savepoint: the error text, ""
    when it passed, None when it could not say (another writer holds the lock, or this request's
    transaction is broken). On SQLite the busy timeout is lifted for the probe, so a page never
    waits on a writer."""
    if connection.in_atomic_block and connection.needs_rollback:
        return None
    table = connection.ops.quote_name("django_migrations")
    sqlite = connection.vendor == "sqlite"
    try:
        with connection.cursor() as cursor:
            if sqlite:
                cursor.execute("PRAGMA busy_timeout")
                timeout = cursor.fetchone()[0]
                cursor.execute("PRAGMA busy_timeout = 0")
            try:
                with transaction.atomic():
                    cursor.execute(f"UPDATE {table} SET id = id WHERE 1 = 0")  # noqa: S608  a fixed name
            finally:
                if sqlite:
                    cursor.execute(f"PRAGMA busy_timeout = {int(timeout)}")
    except DatabaseError as exc:
        error = storage_error(exc)
        return None if BUSY in error or not error else error
    return ""


def storage_fault(*, now: float | None = None) -> dict | None:
    """{"error", "since"} while a storage fault stands, else None (and no query)."""
    if not _fault.error:
        return None
    now = time.monotonic() if now is None else now
    if _fault.last_seen and timezone.now() - _fault.last_seen > FAULT_SHOWN_FOR:
        _fault.clear()
    elif _probe_sees(_fault.error) and now - _fault.probed_at >= PROBE_SECONDS:
        _fault.probed_at = now
        error = probe_write()
        if error:
            _fault.record(error)
        elif error == "":
            _fault.clear()  # writable again
    if not _fault.error:
        return None
    return {"error": _fault.error, "since": _fault.since}


def _probe_sees(error: str) -> bool:
    """Whether the probe (a write that changes no row) meets this fault: a read-only database
    refuses it; a full or failing disk does not, as it writes no page."""
    return any(word in error.lower() for word in ("readonly", "read-only", "read only"))


def _clear_on_write(execute, sql, params, many, context):
    """While a fault stands: a write that passes ends it."""
    result = execute(sql, params, many, context)
    if sql.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE"):
        _fault.clear()
    return result


class StorageFaultMiddleware:
    """A view that fails on a storage error answers 503 with the real error (logged, and shown on
    every page until the storage recovers) instead of Django's generic 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not _fault.error:
            return self.get_response(request)
        with connection.execute_wrapper(_clear_on_write):
            return self.get_response(request)

    def process_exception(self, request, exception):
        error = storage_error(exception)
        if not error:
            return None
        record_fault(error, where=f"{request.method} {request.path}")
        return storage_fault_response(request, error)


def storage_fault_response(request, error: str) -> HttpResponse:
    """The 503 page. Drawn with the request (the user's menu) when the database can still be read,
    else from the base template alone, like the 500 page."""
    context = {"storage_error": error, "busy": BUSY in error}
    try:
        return render(request, "503.html", context, status=503)
    except DatabaseError:
        return HttpResponse(render_to_string("503.html", context), status=503)
