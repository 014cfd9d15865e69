"""The task queue's heartbeat: which proposers the processes that run the engine can serve.

Only the task queue (`manage.py qcluster`) holds ANTHROPIC_API_KEY; the web server never does,
so it cannot look in its own environment to offer the Anthropic proposer. Each django-q2 worker
process, once spawned, writes its host's TaskQueueHeartbeat row every few seconds that says
whether a key is set, never the key itself. The web server reads that row.
"""

import logging
import os
import socket
import threading
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from searches.models import TaskQueueHeartbeat

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = settings.WORKER_HEARTBEAT_SECONDS
SEEN_WITHIN = timedelta(seconds=3 * HEARTBEAT_SECONDS)


def beat() -> None:
    TaskQueueHeartbeat.objects.update_or_create(
        host=socket.gethostname(),
        defaults={"pid": os.getppid(), "anthropic_key": bool(os.environ.get("ANTHROPIC_API_KEY")),
                  "heartbeat_at": timezone.now()})


def _beat_forever() -> None:
    while True:
        try:
            beat()
        except DatabaseError as exc:
            log.warning("task queue heartbeat skipped (database error: %s)", exc)
        finally:
            connection.close()  # this thread's own connection; the worker's tasks keep theirs
        threading.Event().wait(HEARTBEAT_SECONDS)


def start_heartbeat(**_signal_kwargs) -> None:
    """django-q2's post_spawn: runs in each new worker process of the cluster."""
    threading.Thread(target=_beat_forever, daemon=True, name="task-queue-heartbeat").start()


def anthropic_key_seen() -> bool:
    """Whether a live task queue reports an Anthropic key."""
    since = timezone.now() - SEEN_WITHIN
    return TaskQueueHeartbeat.objects.filter(anthropic_key=True, heartbeat_at__gte=since).exists()
