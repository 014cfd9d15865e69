"""The API key's admission, shared by every process that calls the API with it (task workers,
`manage.py search`, on any host of the database): at most ANTHROPIC_KEY_PARALLEL_CALLS calls in
flight, and a pause the API asks for (429 or 529 with retry-after) holds all of the key's callers,
not only the one that got it.

In the database, one row per in-flight place (ApiKeyState): a call takes a free or expired place
with one conditional UPDATE and gives it back after; a place held past the call's timeout (a
killed process) is free again. The key is named by an HMAC of it under SECRET_KEY, never stored.
"""

import contextlib
import hashlib
import hmac
import os
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from proposers.base import ABANDONED, Gate, ProposerError
from searches.models import ApiKeyState

WAIT_STEP_S = 0.25  # how often a waiting caller looks again


def key_name(api_key: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), api_key.encode(), hashlib.sha256).hexdigest()[:32]


class DatabaseGate(Gate):
    def __init__(self, api_key: str, places: int | None = None, hold_s: float | None = None):
        self.key = key_name(api_key)
        self.places = max(1, places or settings.ANTHROPIC_KEY_PARALLEL_CALLS)
        self.hold = timedelta(seconds=hold_s or settings.ANTHROPIC_TIMEOUT * 3 + 60)
        self._places_made = False

    def _make_places(self) -> None:
        for slot in range(self.places):
            ApiKeyState.objects.get_or_create(key=self.key, slot=slot)
        self._places_made = True

    @contextlib.contextmanager
    def slot(self, stopped=lambda: False):
        holder = uuid.uuid4().hex
        if not self._places_made:
            self._make_places()
        while True:
            self.wait(stopped)
            now = timezone.now()
            free = Q(holder="") | Q(held_until__lt=now)
            for slot in range(self.places):
                if ApiKeyState.objects.filter(free, key=self.key, slot=slot).update(
                        holder=holder, held_until=now + self.hold):
                    try:
                        yield
                    finally:
                        ApiKeyState.objects.filter(key=self.key, slot=slot, holder=holder).update(
                            holder="", held_until=None)
                    return
            time.sleep(WAIT_STEP_S)

    def wait(self, stopped=lambda: False) -> None:
        while True:
            if stopped():  # an abandoned call neither waits on nor takes a place from the key's live callers
                raise ProposerError(ABANDONED)
            until = (ApiKeyState.objects.filter(key=self.key, slot=0).values_list("paused_until", flat=True)
                     .first())
            left = (until - timezone.now()).total_seconds() if until else 0
            if left <= 0:
                return
            time.sleep(min(left, WAIT_STEP_S * 4))

    def pause(self, seconds: float) -> None:
        until = timezone.now() + timedelta(seconds=max(0.0, seconds))
        ApiKeyState.objects.filter(Q(paused_until__isnull=True) | Q(paused_until__lt=until),
                                   key=self.key, slot=0).update(paused_until=until)


def for_environment() -> Gate:
    """The gate of the key this process calls the API with (none without a key: nothing to admit)."""
    api_key = os.environ.get("ANTHROPIC_API_KEY", "")
    return DatabaseGate(api_key) if api_key else Gate()
