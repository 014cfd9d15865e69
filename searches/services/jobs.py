"""Writes on evaluation jobs: one that failed for good, told to its owner (called by evaluation.leases
and on cancel), and where a running one stands (its phase, from the evaluator)."""

from django.db import transaction

from evaluation import queue
from searches.models import EvaluationJob

from . import events
from .kernels import kernel_job_failed
from .problems import problem_validation_failed


def job_fail(*, job: EvaluationJob, reason: str, reason_code: str = "") -> None:
    """Fail the job and let its problem or kernel know. Call inside a transaction."""
    queue.mark_failed(job, reason)
    if job.purpose == EvaluationJob.Purpose.VALIDATE:
        problem_validation_failed(job=job, reason=reason)
    else:
        kernel_job_failed(job=job, reason=reason, reason_code=reason_code)


def job_record_phase(*, job_id: int, worker: str, phase: str, started_at, seconds: dict) -> bool:
    """The phase a running job entered (runner/phases.py; "" once its run is over), since when, and the
    seconds each phase it passed took on the evaluator's clock. Kept only while `worker` holds the
    job; a validation's or a kernel of no search's is told on its problem's stream. It informs a
    progress line and the ETAs, nothing else. False when the job is no longer this worker's."""
    with transaction.atomic():
        job = (EvaluationJob.objects.select_for_update(of=("self",)).select_related("kernel")
               .filter(pk=job_id, status=EvaluationJob.Status.LEASED, lease_owner=worker).first())
        if job is None:
            return False
        job.phase, job.phase_started_at, job.phase_seconds = phase, started_at, seconds
        job.save(update_fields=["phase", "phase_started_at", "phase_seconds"])
        if job.purpose == EvaluationJob.Purpose.VALIDATE or (job.kernel_id and not job.kernel.search_id):
            events.publish_job_phase(job)
    return True
