"""Problem writes: creation with static checks, versioning on edit, recording validation."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from evaluation import leases
from evaluation.models import EvaluationJob
from searches import services
from searches.models import Kernel, Problem, Search

from .problem_samples import MISSING_GET_INPUTS, SOFTMAX, SYNTAX_ERROR, two_megabytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def user():
    return get_user_model().objects.create_user("ada", password="pw-for-tests-only")


@pytest.fixture
def problem(user):
    return services.problem_create(user=user, name="Softmax", source=SOFTMAX, atol=1e-5)


def validation_jobs(problem):
    return EvaluationJob.objects.filter(problem=problem, purpose=EvaluationJob.Purpose.VALIDATE)


def ok_result(eager_ms=1.5):
    return {
        "schema": 1, "status": "ok", "reason": "", "outputs": [{"shape": [16, 256], "dtype": "float32"}],
        "family": "softmax", "flops": 20480.0, "min_bytes": 32768.0,
        "baseline": {"eager_ms": eager_ms, "compile_ms": 0.9, "compile_mode": "default"},
        "environment": {"device_name": "cpu", "torch": "2.13.0"},
    }


def test_create_saves_and_queues_a_validation_on_the_problems_device(problem, user):
    assert problem.version == 1 and problem.is_latest
    assert problem.created_by == user
    assert problem.validation_status == Problem.Validation.PENDING
    [job] = validation_jobs(problem)
    assert job.status == EvaluationJob.Status.QUEUED and job.device == "cpu"


def test_create_queues_cuda_problems_for_cuda_workers(user):
    problem = services.problem_create(user=user, name="Softmax GPU", source=SOFTMAX, device="cuda")
    assert validation_jobs(problem).get().device == "cuda"
    assert leases.claim("cpu-worker", "cpu") is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "source, expected",
    [
        (SYNTAX_ERROR, "Syntax error on line 6"),
        (MISSING_GET_INPUTS, "does not define get_inputs"),
        ("", "The source is empty"),
        ("def Model():\n    pass\ndef get_inputs():\n    return []\nget_init_inputs = list\n", "Model must be a class"),
        ("class Model:\n    pass\n", "does not define get_inputs, get_init_inputs."),
        ("x = 1\0\n", "cannot be parsed as Python"),
        (two_megabytes(), "The source is 2.0 MB; the limit is"),
    ],
)
def test_create_rejects_bad_source_without_saving(user, source, expected):
    with pytest.raises(ValidationError) as raised:
        services.problem_create(user=user, name="Broken", source=source)
    assert expected in raised.value.messages[0]
    assert not Problem.objects.exists()
    assert not EvaluationJob.objects.exists()


def test_create_rejects_negative_tolerance_and_unknown_device(user):
    with pytest.raises(ValidationError, match="atol must be"):
        services.problem_create(user=user, name="x", source=SOFTMAX, atol=-1.0)
    with pytest.raises(ValidationError, match="Unknown device 'tpu'"):
        services.problem_create(user=user, name="x", source=SOFTMAX, device="tpu")


def test_edit_without_results_changes_in_place_and_revalidates(problem, user):
    services.problem_record_validation(problem=problem, job=validation_jobs(problem).get(), result=ok_result())
    edited = services.problem_update(problem=problem, user=user, source=SOFTMAX.replace("256", "512"))
    assert edited.pk == problem.pk and edited.version == 1
    assert edited.validation_status == Problem.Validation.PENDING and edited.validation is None
    assert validation_jobs(problem).filter(status=EvaluationJob.Status.QUEUED).count() == 1


def test_edit_of_name_only_keeps_the_validation(problem, user):
    services.problem_record_validation(problem=problem, job=validation_jobs(problem).get(), result=ok_result())
    edited = services.problem_update(problem=problem, user=user, name="Row softmax")
    assert edited.pk == problem.pk and edited.name == "Row softmax"
    assert edited.validation_status == Problem.Validation.OK
    assert validation_jobs(problem).count() == 1


def test_edit_that_changes_nothing_is_a_no_op(problem, user):
    same = services.problem_update(problem=problem, user=user, name="Softmax", source=SOFTMAX, atol=1e-5)
    assert same.pk == problem.pk and Problem.objects.count() == 1


@pytest.mark.parametrize("owner", ["search", "kernel"])
def test_edit_of_a_problem_with_results_makes_a_new_version(problem, user, owner):
    services.problem_record_validation(problem=problem, job=validation_jobs(problem).get(), result=ok_result())
    if owner == "search":
        result_holder = Search.objects.create(problem=problem, created_by=user)
    else:
        result_holder = Kernel.objects.create(problem=problem, source="class ModelNew: pass")

    new = services.problem_update(problem=problem, user=user, source=SOFTMAX.replace("256", "1024"), rtol=1e-3)

    problem.refresh_from_db()
    result_holder.refresh_from_db()
    assert new.pk != problem.pk
    assert (new.lineage, new.version, new.previous_version_id) == (problem.lineage, 2, problem.pk)
    assert new.is_latest and not problem.is_latest
    assert "1024" in new.source and "1024" not in problem.source and new.rtol == 1e-3
    # The old version keeps its source, its results and its measurements.
    assert result_holder.problem_id == problem.pk
    assert problem.validation_status == Problem.Validation.OK and problem.validation["baseline"]["eager_ms"] == 1.5
    assert new.validation_status == Problem.Validation.PENDING
    assert validation_jobs(new).get().status == EvaluationJob.Status.QUEUED


def test_cosmetic_new_version_carries_the_validation(problem, user):
    services.problem_record_validation(problem=problem, job=validation_jobs(problem).get(), result=ok_result())
    Search.objects.create(problem=problem)
    new = services.problem_update(problem=problem, user=user, description="Renamed only")
    problem.refresh_from_db()
    assert new.version == 2 and new.validation_status == Problem.Validation.OK
    assert new.validation == problem.validation and not validation_jobs(new).exists()


def test_only_the_latest_version_can_be_edited(problem, user):
    Search.objects.create(problem=problem)
    services.problem_update(problem=problem, user=user, name="v2")
    with pytest.raises(ValidationError, match="This is version 1, and version 2 is the latest"):
        services.problem_update(problem=problem, user=user, name="v3 from v1")


def test_edit_rejects_a_broken_source_and_keeps_the_old_one(problem, user):
    with pytest.raises(ValidationError, match="Syntax error on line 6"):
        services.problem_update(problem=problem, user=user, source=SYNTAX_ERROR)
    problem.refresh_from_db()
    assert problem.source == SOFTMAX


def test_edit_refuses_fields_that_are_not_editable(problem, user):
    with pytest.raises(TypeError, match="lineage"):
        services.problem_update(problem=problem, user=user, lineage=None)


def test_record_validation_stores_the_whole_result_and_finishes_the_job(problem):
    job = leases.claim("w1", "cpu")
    services.problem_record_validation(problem=problem, job=job, result=ok_result())
    problem.refresh_from_db()
    job.refresh_from_db()
    assert problem.validation_status == Problem.Validation.OK
    assert (problem.family, problem.flops, problem.min_bytes) == ("softmax", 20480.0, 32768.0)
    assert problem.validation == ok_result() and problem.validated_at is not None
    assert problem.baseline == {"eager_ms": 1.5, "compile_ms": 0.9, "compile_mode": "default"}
    assert job.status == EvaluationJob.Status.DONE


def test_record_validation_of_an_invalid_reference_keeps_the_reason(problem):
    result = {**ok_result(), "status": "invalid", "reason": "Model.forward raised RuntimeError: boom", "family": None}
    services.problem_record_validation(problem=problem, job=leases.claim("w1", "cpu"), result=result)
    problem.refresh_from_db()
    assert problem.validation_status == Problem.Validation.INVALID
    assert problem.validation_reason == "Model.forward raised RuntimeError: boom"


def test_a_result_for_an_edited_source_is_ignored(problem, user):
    stale_job = leases.claim("w1", "cpu")  # running on the old source
    services.problem_update(problem=problem, user=user, source=SOFTMAX.replace("256", "128"))
    services.problem_record_validation(problem=problem, job=stale_job, result=ok_result())
    problem.refresh_from_db()
    assert problem.validation_status == Problem.Validation.PENDING
    stale_job.refresh_from_db()
    assert stale_job.status == EvaluationJob.Status.DONE


def test_a_failed_job_marks_the_problem_error_with_the_reason(problem):
    job = leases.claim("w1", "cpu")
    services.job_fail(job=job, reason="gave up after 3 attempts: the evaluation kept killing its worker")
    problem.refresh_from_db()
    assert problem.validation_status == Problem.Validation.ERROR
    assert "kept killing its worker" in problem.validation_reason


def test_request_validation_queues_a_fresh_job(problem, user):
    job = leases.claim("w1", "cpu")
    services.job_fail(job=job, reason="worker died")
    services.problem_request_validation(problem=problem, user=user)
    problem.refresh_from_db()
    assert problem.validation_status == Problem.Validation.PENDING and problem.validation_reason == ""
    assert validation_jobs(problem).filter(status=EvaluationJob.Status.QUEUED).count() == 1
