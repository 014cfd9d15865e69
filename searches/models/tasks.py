"""The task queue's heartbeat (searches/task_queue.py): one row per host running `qcluster`."""

from django.db import models


class TaskQueueHeartbeat(models.Model):
    """A host's django-q2 cluster, alive while its row is fresh. It says whether that cluster holds an
    Anthropic key (never the key): the web server holds none and reads this to offer the proposer."""

    host = models.CharField(max_length=200, unique=True)
    pid = models.PositiveIntegerField(null=True, blank=True)  # the cluster's, as its spawned workers see it
    anthropic_key = models.BooleanField(default=False)
    heartbeat_at = models.DateTimeField()

    class Meta:
        ordering = ["host"]
