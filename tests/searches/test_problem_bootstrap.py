"""`manage.py bootstrap`: the first user and the built-in catalog, safe to re-run."""

import re
from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from evaluation.models import EvaluationJob
from searches import catalog, selectors
from searches.models import Problem

pytestmark = pytest.mark.django_db


def bootstrap(*args) -> str:
    out = StringIO()
    call_command("bootstrap", *args, stdout=out)
    return out.getvalue()


def test_first_run_creates_a_superuser_with_a_printed_generated_password():
    output = bootstrap()
    match = re.search(r"Log in as admin with password (\S+) \(shown only this once", output)
    assert match, output
    password = match.group(1)
    user = get_user_model().objects.get()
    assert user.username == "admin" and user.is_superuser
    assert password not in user.password and user.password.startswith(("pbkdf2_", "argon2", "bcrypt"))
    assert authenticate(username="admin", password=password) == user
    assert "/login/" in output


def test_rerun_keeps_users_and_never_prints_a_password():
    first = bootstrap("--username", "ada", "--password", "a-long-given-password")
    assert "Log in as ada with the password you gave." in first
    assert "a-long-given-password" not in first
    second = bootstrap("--username", "someone-else")
    assert get_user_model().objects.count() == 1
    assert "with password" not in second and "a-long-given-password" not in second
    assert authenticate(username="ada", password="a-long-given-password") is not None
    assert "Log in with an existing account" in second


def test_catalog_is_loaded_once_with_a_validation_job_per_problem():
    output = bootstrap()
    entries = catalog.problems()
    assert f"Catalog: {len(entries)} problem(s) added, 0 already loaded." in output
    for entry in entries:
        problem = Problem.objects.get(catalog_key=entry.key)
        assert (problem.name, problem.device, problem.source, problem.family) == (
            entry.name, entry.device, entry.source, entry.family)
        if entry.device == "cpu":
            job = EvaluationJob.objects.get(problem=problem, purpose="validate")
            assert job.device == entry.device and job.status == "queued"
        else:  # no CUDA worker serves this install: stored, not queued, and said so
            assert not EvaluationJob.objects.filter(problem=problem).exists()
            assert selectors.problem_validation_state(problem)["label"] == "Needs a CUDA worker"
    assert "GPU problems are stored, not queued: no CUDA worker serves this install" in output

    again = bootstrap()
    assert f"Catalog: 0 problem(s) added, {len(entries)} already loaded." in again
    assert Problem.objects.count() == len(entries)
    assert EvaluationJob.objects.count() == sum(entry.device == "cpu" for entry in entries)


def test_a_deleted_catalog_problem_comes_back_and_the_others_stay():
    bootstrap()
    first = catalog.problems()[0]
    Problem.objects.filter(catalog_key=first.key).delete()
    output = bootstrap()
    assert "Catalog: 1 problem(s) added" in output
    assert Problem.objects.filter(catalog_key=first.key).count() == 1


def test_no_catalog_flag():
    bootstrap("--no-catalog", "--password", "a-long-given-password")
    assert not Problem.objects.exists()


def test_url_option_sets_the_address_printed():
    output = bootstrap("--no-catalog", "--url", "http://127.0.0.1:8123/")
    assert "open http://127.0.0.1:8123/login/" in output


def test_catalog_gpu_problems_are_queued_where_a_cuda_worker_serves(settings):
    settings.RUNNER_DEVICE = "cuda"
    bootstrap()
    assert EvaluationJob.objects.filter(device="cuda").exists()
