"""Writes on evaluation jobs: one that failed for good, told to its owner (on cancel, and from the
evaluation worker through the sink), where a running one stands (its phase, from the evaluator),
and the sink itself: what the worker hands back, registered by `SearchesConfig.ready`."""

from django.db import transaction

from evaluation import queue
from evaluation.models import EvaluationJob
from searches.engine.kick import rekick_stalled

from . import events
from .kernels import kernel_job_failed, kernel_mark_evaluating, kernel_record_verdict
from .problems import problem_record_validation, problem_validation_failed
from .tools import tool_job_record


def job_fail(*, job: EvaluationJob, reason: str, reason_code: str = "") -> None:
    """Fail the job and let its problem or kernel know. Call inside a transaction."""
    queue.mark_failed(job, reason)
    job_failure_told(job=job, reason=reason, reason_code=reason_code)


def job_failure_told(*, job: EvaluationJob, reason: str, reason_code: str = "") -> None:
    """The job's row says it failed: its problem or kernel learns why. Inside a transaction."""
    if job.purpose == EvaluationJob.Purpose.VALIDATE:
        problem_validation_failed(job=job, reason=reason)
    else:
        kernel_job_failed(job=job, reason=reason, reason_code=reason_code)


def job_record_verdict(*, job: EvaluationJob, result: dict) -> None:
    """The runner's answer for a job, by what it was for. Inside the worker's verdict transaction."""
    if job.purpose == EvaluationJob.Purpose.VALIDATE:
        problem_record_validation(problem=job.problem, job=job, result=result)
    elif job.purpose == EvaluationJob.Purpose.TOOL:
        tool_job_record(job=job, result=result)
    else:
        kernel_record_verdict(kernel=job.kernel, job=job, result=result)


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


class EvaluationSink:
    """What the evaluation worker hands back (evaluation.sink.Sink), written through these services."""

    def job_started(self, job: EvaluationJob) -> None:
        kernel_mark_evaluating(job=job)

    def job_phase(self, *, job_id: int, worker: str, phase: str, started_at, seconds: dict) -> bool:
        return job_record_phase(job_id=job_id, worker=worker, phase=phase, started_at=started_at, seconds=seconds)

    def verdict(self, job: EvaluationJob, result: dict) -> None:
        job_record_verdict(job=job, result=result)

    def job_failed(self, job: EvaluationJob, reason: str, reason_code: str = "") -> None:
        job_failure_told(job=job, reason=reason, reason_code=reason_code)

    def stalled(self) -> int:
        return rekick_stalled()
