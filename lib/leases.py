"""One thread that keeps a lease alive while slow work runs: the search engine's lease on a
search (during proposer calls) and the evaluation worker's lease on a job (during a sandboxed run)."""

import logging
import threading

from django.db import DatabaseError, connection

log = logging.getLogger(__name__)


class LeaseRenewer(threading.Thread):
    """Calls `renew()` every `interval` seconds until stopped, or until `renew()` returns False
    (the lease was lost). A busy database skips one renewal instead of ending the thread, and
    the thread's own database connection is closed when it ends."""

    def __init__(self, renew, *, interval: float, name: str):
        super().__init__(daemon=True, name=name)
        self.renew = renew
        self.interval = interval
        self._done = threading.Event()

    def run(self) -> None:
        try:
            while not self._done.wait(self.interval):
                try:
                    if self.renew() is False:
                        log.warning("%s: lease lost", self.name)
                        return
                except DatabaseError:
                    log.warning("%s: renewal skipped (database busy)", self.name)
        finally:
            connection.close()

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=5)
