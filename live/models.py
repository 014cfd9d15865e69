"""The event logs and their counters. A stream is one search's events, or one problem's (its work
outside any search); `StreamCounter` holds each stream's last number. The foreign keys name the
`searches` models as strings: `live` imports nothing of `searches`."""

from django.db import models


class Streams(models.TextChoices):
    SEARCH = "search", "Search"
    PROBLEM = "problem", "Problem"


class StreamCounter(models.Model):
    """The last sequence number given on one stream. Its row is locked by every append to the
    stream (live/events.py), so numbers follow commit order; a stream with no event has no row."""

    stream = models.CharField(max_length=16, choices=Streams.choices)
    owner_id = models.PositiveBigIntegerField()  # the search's or the problem's id
    last_seq = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["stream", "owner_id"], name="unique_stream_counter")]


class EventLog(models.Model):
    """An append-only event stream's rows: `seq` is assigned under a lock on the stream's counter in the
    writing transaction (live/events.py), so it follows commit order."""

    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True


class ProblemEvent(EventLog):
    """A problem's work outside any search (its validations, its hand-submitted kernels)."""

    problem = models.ForeignKey("searches.Problem", on_delete=models.CASCADE, related_name="events")

    class Meta:
        db_table = "searches_problemevent"  # the table kept its name when the model moved here
        ordering = ["problem", "seq"]
        constraints = [models.UniqueConstraint(fields=["problem", "seq"], name="unique_problem_event_seq")]


class SearchEvent(EventLog):
    """What happened in a search."""

    search = models.ForeignKey("searches.Search", on_delete=models.CASCADE, related_name="events")

    class Meta:
        db_table = "searches_searchevent"
        ordering = ["search", "seq"]
        constraints = [models.UniqueConstraint(fields=["search", "seq"], name="unique_event_seq")]
