"""The team's memory across searches: idea outcomes and the lessons people approved. Points at `searches`
models by name only, so this package never imports `searches`."""

import uuid

from django.conf import settings
from django.db import models

LESSON_CHARS = 240  # one line: longer text is cut, so a lesson stays a lesson in every prompt it enters


class Lesson(models.Model):
    """A one-line pitfall a model wrote after a failure ("offset inputs break a max-free softmax"),
    keyed like idea outcomes (memory.keys.IdeaKey). Proposed by the model, it reaches prompts only once
    a person approved it; the person's decision and edit are kept beside the model's words."""

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    text = models.CharField(max_length=LESSON_CHARS)  # the model's words, as proposed
    edited_text = models.CharField(max_length=LESSON_CHARS, blank=True)  # a person's rewording, shown instead
    # The key (memory.keys.IdeaKey): which later searches it applies to.
    family = models.CharField(max_length=50, blank=True, db_index=True)
    shape_class = models.CharField(max_length=16, blank=True)
    device_model = models.CharField(max_length=200, blank=True, db_index=True)
    language = models.CharField(max_length=16, blank=True)
    technique = models.CharField(max_length=32, default="other")
    # The failure it came from: the verdict and the runner's reason code (blank where the verdict has none).
    verdict = models.CharField(max_length=16)
    reason_code = models.CharField(max_length=32, blank=True)
    search = models.ForeignKey("searches.Search", on_delete=models.CASCADE, related_name="lessons")
    kernel = models.ForeignKey("searches.Kernel", null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="lessons")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROPOSED, db_index=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="lessons_decided")
    decided_at = models.DateTimeField(null=True, blank=True)  # approval time: the rate's before/after split
    edited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="lessons_edited")
    edited_at = models.DateTimeField(null=True, blank=True)
    shown_count = models.PositiveIntegerField(default=0)  # prompts it entered
    last_shown_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "family", "device_model"])]

    @property
    def shown_text(self) -> str:
        return self.edited_text or self.text

    def __str__(self):
        return self.shown_text
