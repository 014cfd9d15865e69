"""A job that failed for good, told to its owner (called by evaluation.leases and on cancel)."""

from evaluation import queue
from searches.models import EvaluationJob

from .kernels import kernel_job_failed
from .problems import problem_validation_failed


def job_fail(*, job: EvaluationJob, reason: str, reason_code: str = "") -> None:
    """Fail the job and let its problem or kernel know. Call inside a transaction."""
    queue.mark_failed(job, reason)
    if job.purpose == EvaluationJob.Purpose.VALIDATE:
        problem_validation_failed(job=job, reason=reason)
    else:
        kernel_job_failed(job=job, reason=reason, reason_code=reason_code)
