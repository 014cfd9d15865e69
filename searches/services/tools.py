"""Writes of the agent's tool runs: the runner's answer kept on its job (advice for a model's draft,
never a kernel's verdict)."""

from django.db import transaction
from django.utils import timezone

from evaluation.models import EvaluationJob

# What of the runner's answer a tool run keeps: enough to word it for the model, nothing of the sandbox.
KEPT = ("status", "reason", "reason_code", "log", "compile", "correctness", "timing", "speedup_vs_eager", "paired",
        "profile", "quarantined", "advisories", "precision")


@transaction.atomic
def tool_job_record(*, job: EvaluationJob, result: dict) -> None:
    """The runner answered a tool run: keep its answer on the job, done."""
    job.result = {key: result.get(key) for key in KEPT}
    job.status = EvaluationJob.Status.DONE
    job.finished_at = timezone.now()
    job.save(update_fields=["result", "status", "finished_at"])
