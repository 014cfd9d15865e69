"""One thread that keeps a lease alive while slow work runs: the search engine's lease on a
search (during proposer calls) and the evaluation worker's lease on a job (during a sandboxed run)."""

import logging
import threading

from django.db import DatabaseError, connection

log = logging.getLogger(__name__)


class LeaseRenewer(threading.Thread):
    """Calls `renew()` every `interval` seconds until stopped, or until `renew()` returns False
    (the lease was lost: `lost` is set then, and `on_lost()` called, for the holder to drop its work).
    A database error (busy, read-only, full) skips one renewal, logged with its real text, instead of
    ending the thread, and the thread's own database connection is closed when it ends."""

    def __init__(self, renew, *, interval: float, name: str, on_lost=None):
        super().__init__(daemon=True, name=name)
        self.renew, self.on_lost = renew, on_lost
        self.interval = interval
        self.lost = threading.Event()
        self._done = threading.Event()

    def run(self) -> None:
        try:
            while not self._done.wait(self.interval):
                try:
                    if self.renew() is False:
                        log.warning("%s: lease lost", self.name)
                        self.lost.set()
                        if self.on_lost is not None:
                            self.on_lost()
                        return
                except DatabaseError as exc:  # the real error: locked, read-only, full, I/O
                    log.warning("%s: renewal skipped (database error: %s)", self.name, exc)
        finally:
            connection.close()

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=5)
