"""Evaluation jobs: claims, leases, hand-backs and the attempt counter."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evaluation import leases, queue
from searches.models import EvaluationJob, Kernel, Problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def job():
    problem = Problem.objects.create(name="p", source="x = 1\n")
    kernel = Kernel.objects.create(problem=problem, source="class ModelNew: pass\n", origin="user")
    return queue.enqueue_kernel(kernel, purpose=EvaluationJob.Purpose.MANUAL)


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


def test_a_restarted_worker_frees_its_old_leases_and_the_attempt_counts(job):
    leases.claim("host-cpu", "cpu")
    assert leases.expire_leases_of("host-cpu") == 1
    again = leases.claim("host-cpu", "cpu")
    assert again.pk == job.pk and again.attempts == 2


def test_a_job_out_of_attempts_fails_for_good_with_its_kernel(job):
    EvaluationJob.objects.filter(pk=job.pk).update(
        status="leased", attempts=3, lease_owner="dead", lease_expires_at=timezone.now() - timedelta(seconds=1))
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
