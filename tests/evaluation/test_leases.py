"""Evaluation jobs: claims, leases, hand-backs and the attempt counter."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluation import leases, queue
from evaluation.models import EvaluationJob, Worker
from evaluation.scheduling import Priority
from searches import services
from searches.models import Kernel, Problem
from tests.searches import dashboard_data
from tests.searches.problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db


@pytest.fixture
def job():
    problem = Problem.objects.create(name="p", source="x = 1\n")
    kernel = Kernel.objects.create(problem=problem, source="class ModelNew: pass\n", origin="user")
    return queue.enqueue_kernel(kernel, purpose=EvaluationJob.Purpose.MANUAL)


@pytest.mark.slow
def test_a_lease_is_renewed_only_by_its_holder(job):
    claimed = leases.claim("a", "cpu")
    assert claimed.pk == job.pk and claimed.attempts == 1
    assert leases.claim("b", "cpu") is None  # leased, lease fresh
    assert leases.renew(job.pk, "a") and not leases.renew(job.pk, "b")


def test_a_stopping_worker_hands_its_job_back_without_using_an_attempt(job):
    claimed = leases.claim("a", "cpu")
    assert leases.release(claimed, "a")
    job.refresh_from_db()
    assert (job.status, job.attempts, job.lease_owner) == ("queued", 0, "")
    assert not leases.release(claimed, "a")  # not held any more


def test_a_restarted_worker_frees_its_old_leases_and_a_started_run_counts(job):
    leases.claim("host-cpu", "cpu")
    assert leases.mark_run_started(job.pk, "host-cpu")  # the sandbox had the job when the worker died
    assert leases.expire_leases_of("host-cpu") == 1
    again = leases.claim("host-cpu", "cpu")
    assert again.pk == job.pk and (again.attempts, again.infra_attempts) == (2, 0)
    assert again.run_started_at is None and "died while running it" in again.last_error


def test_a_worker_that_died_before_the_run_began_spends_no_attempt(job):
    leases.claim("host-cpu", "cpu")
    assert leases.expire_leases_of("host-cpu") == 1
    again = leases.claim("host-cpu", "cpu")
    assert again.pk == job.pk and (again.attempts, again.infra_attempts) == (1, 1)
    assert again.last_error == "the evaluator 'host-cpu' stopped before it ran the job"


def test_a_job_out_of_attempts_fails_for_good_with_its_kernel(job):
    EvaluationJob.objects.filter(pk=job.pk).update(
        status="leased", attempts=3, lease_owner="dead", lease_expires_at=timezone.now() - timedelta(seconds=1),
        run_started_at=timezone.now() - timedelta(seconds=5))
    assert leases.claim("a", "cpu") is None
    job.refresh_from_db()
    assert job.status == "failed" and "gave up after 3 attempts" in job.last_error
    assert job.kernel.status == "failed"


def test_an_error_counts_an_attempt_and_the_last_one_fails_the_job(job):
    for attempt in (1, 2):
        claimed = leases.claim("a", "cpu")
        leases.release(claimed, "a", error="runner broke", count_attempt=True)
        job.refresh_from_db()
        assert (job.status, job.attempts, job.last_error) == ("queued", attempt, "runner broke")
    claimed = leases.claim("a", "cpu")
    leases.release(claimed, "a", error="runner broke", count_attempt=True)
    job.refresh_from_db()
    assert job.status == "failed" and job.kernel.status == "failed"


def test_a_worker_with_enough_quick_jobs_takes_only_jobs_that_build(job):
    problem = job.problem
    extension = Kernel.objects.create(problem=problem, origin="user",
                                      source="from torch.utils.cpp_extension import load_inline\n")
    built = queue.enqueue_kernel(extension, purpose=EvaluationJob.Purpose.MANUAL)
    validation = queue.enqueue_validation(problem, priority=0)
    assert not leases.builds(job) and leases.builds(built) and leases.builds(validation)

    assert leases.claim("a", "cpu", quick=False) == built  # the older quick job stays queued
    assert leases.claim("a", "cpu", quick=False) == validation
    assert leases.claim("a", "cpu", quick=False) is None
    assert leases.claim("a", "cpu") == job


# --- a holder that stopped beating: claimable at once, and fenced ------------------------------

def beat(name: str, seconds_ago: float) -> Worker:
    return Worker.objects.update_or_create(name=name, defaults={
        "heartbeat_at": timezone.now() - timedelta(seconds=seconds_ago)})[0]


STALE = leases.STALE_AFTER_BEATS * Worker.HEARTBEAT_SECONDS + 1


def test_the_job_of_a_worker_with_a_stale_heartbeat_is_claimable_before_its_lease_runs_out(job):
    held = leases.claim("a", "cpu")
    assert held.lease_expires_at > timezone.now() + timedelta(seconds=settings.JOB_LEASE_SECONDS - 60)
    beat("a", seconds_ago=STALE - 2)  # two beats missed: still alive
    assert leases.claim("b", "cpu") is None
    beat("a", seconds_ago=STALE)
    taken = leases.claim("b", "cpu")
    assert taken.pk == job.pk and taken.lease_owner == "b"
    # the first holder is fenced: it can neither renew, nor start the run, nor record under the lease
    assert not leases.renew(job.pk, "a") and not leases.holds(job.pk, "a")
    assert not leases.mark_run_started(job.pk, "a")
    with transaction.atomic():
        assert not leases.held_for_record(job.pk, "a") and leases.held_for_record(job.pk, "b")
    assert not leases.release(held, "a")


def test_a_holder_without_a_heartbeat_row_keeps_its_job_until_the_lease_runs_out(job):
    leases.claim("a", "cpu")  # e.g. a script claiming jobs by hand: no Worker row to judge it by
    beat("b", seconds_ago=STALE)
    assert leases.claim("b", "cpu") is None


def test_evaluators_dying_before_the_run_fail_the_job_at_the_cap_with_the_last_error(job, settings):
    settings.JOB_MAX_INFRA_ATTEMPTS = 3
    for died in range(settings.JOB_MAX_INFRA_ATTEMPTS):
        claimed = leases.claim(f"w{died}", "cpu")
        assert claimed is not None and (claimed.attempts, claimed.infra_attempts) == (1, died)
        beat(f"w{died}", seconds_ago=STALE)
    assert leases.claim("last", "cpu") is None
    job.refresh_from_db()
    assert (job.status, job.attempts, job.infra_attempts) == ("failed", 0, 3)
    message = "the evaluators failed 3 times before running it: the evaluator 'w2' stopped before it ran the job"
    assert job.last_error == message
    assert job.kernel.status == "failed" and job.kernel.reason == message


def test_a_run_that_began_spends_its_attempts_whoever_killed_the_evaluator(job):
    for attempt in range(1, job.max_attempts + 1):
        claimed = leases.claim(f"w{attempt}", "cpu")
        assert (claimed.attempts, claimed.infra_attempts) == (attempt, 0)
        assert leases.mark_run_started(job.pk, f"w{attempt}")
        beat(f"w{attempt}", seconds_ago=STALE)
    assert leases.claim("last", "cpu") is None
    job.refresh_from_db()
    assert job.status == "failed" and job.last_error.startswith("gave up after 3 attempts")


def test_a_database_fault_before_the_run_is_handed_back_without_spending_an_attempt(job, settings):
    settings.JOB_MAX_INFRA_ATTEMPTS = 2
    claimed = leases.claim("a", "cpu")
    assert leases.release(claimed, "a", error="the database failed before the run began: disk I/O error",
                          count_infra=True)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.infra_attempts) == ("queued", 0, 1)
    claimed = leases.claim("a", "cpu")
    assert leases.release(claimed, "a", error="the database failed before the run began: disk I/O error",
                          count_infra=True)
    job.refresh_from_db()
    assert job.status == "failed" and job.last_error == (
        "the evaluators failed 2 times before running it: the database failed before the run began: disk I/O error")


def test_claims_take_interactive_work_then_a_searchs_candidates_then_bulk_work():
    """One person's bulk work queued first (a suite import with validation) does not hold back a
    search's candidates, and a person's own kernel goes ahead of both (evaluation/scheduling.py)."""
    ada, bob = dashboard_data.user("ada"), dashboard_data.user("bob")
    files = [(f"level1/{n}_Softmax.py", (f"# {n}\n" + SOFTMAX).encode()) for n in (1, 2, 3)]
    services.suite_import(user=ada, suite_name="bulk", files=files, device="cpu", validate=True)
    problem = dashboard_data.problem(name="Softmax", source=SOFTMAX, device="cpu")
    search = dashboard_data.search(problem=problem, device="cpu")
    candidates = [dashboard_data.kernel(problem=problem, search=search, status="pending", run=False) for _ in (1, 2)]
    for kernel in candidates:
        queue.enqueue_kernel(kernel)  # as the engine queues them
    services.kernel_submit(user=bob, problem=problem, source=SOFTMAX.replace("class Model(", "class ModelNew("))

    claimed = []
    while (job := leases.claim("w", "cpu")) is not None:
        claimed.append((job.purpose, job.priority))
    assert claimed == [("manual", Priority.INTERACTIVE), ("search", Priority.SEARCH), ("search", Priority.SEARCH),
                       *[("validate", Priority.BULK)] * 3]
