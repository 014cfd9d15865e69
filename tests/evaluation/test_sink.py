"""The worker hands what its jobs come to to the sink the owner of the jobs registered (searches, at
start-up), never importing it; with no sink it fails loudly and loses no job."""

from contextlib import contextmanager

import pytest

from evaluation import leases, queue, sink
from evaluation.models import EvaluationJob
from evaluation.worker import EvaluationWorker
from searches import services
from searches.models import BenchmarkRun, Kernel, Problem
from tests.runner import sources
from tests.searches.test_engine import runner_verdict


def queued_kernel() -> EvaluationJob:
    problem = Problem.objects.create(name="silu", source=sources.SILU_PROBLEM, device="cpu")
    kernel = Kernel.objects.create(problem=problem, source="class ModelNew: pass\n", origin="user")
    return queue.enqueue_kernel(kernel, purpose=EvaluationJob.Purpose.MANUAL)


@pytest.fixture
def no_sink():
    previous = sink.register(None)
    yield
    sink.register(previous)


class Recorder:
    def __init__(self):
        self.seen = []

    def job_started(self, job):
        self.seen.append(("started", job.pk))

    def job_phase(self, *, job_id, worker, phase, started_at, seconds):
        self.seen.append(("phase", job_id, phase))
        return True

    def verdict(self, job, result):
        self.seen.append(("verdict", job.pk, result["status"]))

    def job_failed(self, job, reason, reason_code=""):
        self.seen.append(("failed", job.pk, reason))

    def stalled(self):
        self.seen.append(("stalled",))
        return 0


@pytest.fixture
def recorder():
    recording = Recorder()
    previous = sink.register(recording)
    yield recording
    sink.register(previous)


def test_searches_registers_its_services_as_the_sink_at_start_up():
    assert isinstance(sink.current(), services.EvaluationSink)


@pytest.mark.django_db
def test_with_no_sink_the_worker_refuses_to_start_and_claims_nothing(no_sink):
    job = queued_kernel()
    with pytest.raises(sink.NoSink, match="SearchesConfig.ready"):
        EvaluationWorker(name="w", device="cpu").run(once=True)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.lease_owner) == ("queued", 0, "")


@pytest.mark.django_db
def test_a_job_claimed_when_the_sink_is_gone_goes_back_to_the_queue_unspent(no_sink):
    job = queued_kernel()
    claimed = leases.claim("w", "cpu")
    with pytest.raises(sink.NoSink):
        EvaluationWorker(name="w", device="cpu").run_job(pool=None, job=claimed)  # never reaches the pool
    job.refresh_from_db()
    assert (job.status, job.attempts, job.lease_owner) == ("queued", 0, "")
    assert "no sink" in job.last_error


class SinkLeavingPool:
    """Judges the job, but the sink is gone by the time its verdict is to be recorded."""

    @contextmanager
    def scope(self, on_phase=None):
        yield self

    def cancel(self):
        pass

    def evaluate(self, problem_source, kernel_source, **options):
        sink.register(None)
        return runner_verdict()


@pytest.mark.django_db(transaction=True)  # the worker's phase writer is a thread with its own connection
def test_a_verdict_with_no_sink_to_take_it_is_not_lost_the_job_goes_back_to_the_queue():
    previous = sink.current()
    job = queued_kernel()
    try:
        with pytest.raises(sink.NoSink):
            EvaluationWorker(name="w", device="cpu").run_job(SinkLeavingPool(), leases.claim("w", "cpu"))
    finally:
        sink.register(previous)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.lease_owner) == ("queued", 0, "")
    assert BenchmarkRun.objects.count() == 0


@pytest.mark.django_db
def test_a_failure_with_no_sink_raises_and_leaves_the_job_unfailed(no_sink):
    job = queued_kernel()
    EvaluationJob.objects.filter(pk=job.pk).update(attempts=3, max_attempts=3)  # the claim would fail it
    with pytest.raises(sink.NoSink):
        leases.claim("w", "cpu")
    job.refresh_from_db()
    assert (job.status, job.last_error) == ("queued", "")


@pytest.mark.django_db
def test_a_verdict_a_failure_and_the_nudge_go_to_the_registered_sink(recorder):
    job = queued_kernel()
    held = leases.claim("w", "cpu")
    worker = EvaluationWorker(name="w", device="cpu", rekick_seconds=1)
    assert worker._record(held, runner_verdict()) is True
    worker._maybe_rekick()
    other = queued_kernel()
    EvaluationJob.objects.filter(pk=other.pk).update(attempts=3, max_attempts=3)
    assert leases.claim("w", "cpu") is None  # out of attempts: failed on the way, told to the sink
    assert recorder.seen == [("verdict", job.pk, "correct"), ("stalled",),
                             ("failed", other.pk, "gave up after 3 attempts: the evaluation kept killing its worker")]
    assert EvaluationJob.objects.get(pk=other.pk).status == "failed"
