"""The validation flow with the real sandbox: the runner validates a problem (CPU) and its
verdict lands on the problem page's data through problem_record_validation."""

import pytest
from django.contrib.auth import get_user_model

import runner
from evaluation import leases, queue
from evaluation.models import EvaluationJob
from searches import selectors, services
from searches.models import Problem

from .problem_samples import MISSING_GET_INPUTS, RAISES_AT_RUN_TIME, SOFTMAX, SYNTAX_ERROR

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def user():
    return get_user_model().objects.create_user("ada", password="pw-for-tests-only")


def validate_next_job() -> Problem:
    """What the evaluator does with a validation job, run here with the real runner."""
    job = leases.claim("test-evaluator", "cpu")
    assert job is not None and job.purpose == EvaluationJob.Purpose.VALIDATE
    result = runner.validate(job.problem.source, device=job.device, timeout=240)
    services.problem_record_validation(problem=job.problem, job=job, result=result)
    job.refresh_from_db()
    assert job.status == EvaluationJob.Status.DONE
    return Problem.objects.get(pk=job.problem_id)


def test_a_cpu_problem_validates_with_shapes_family_and_both_baselines(user, compile_baseline):
    services.problem_create(user=user, name="Softmax", source=SOFTMAX)
    problem = validate_next_job()
    assert problem.validation_status == Problem.Validation.OK, problem.validation_reason
    assert problem.validation["outputs"] == [{"shape": [16, 256], "dtype": "float32"}]
    assert problem.family == "softmax"
    assert problem.min_bytes == 2 * 16 * 256 * 4  # read the input once, write the output once
    assert problem.baseline["eager_ms"] > 0 and problem.baseline["compile_ms"] > 0
    assert problem.validation["environment"]["torch"].startswith("2.")
    assert selectors.problem_validation_state(problem)["label"] == "Valid"


def test_a_reference_that_raises_is_invalid_with_the_exception_text(user):
    services.problem_create(user=user, name="Raises", source=RAISES_AT_RUN_TIME)
    problem = validate_next_job()
    assert problem.validation_status == Problem.Validation.INVALID
    assert "RuntimeError: reference exploded on purpose" in problem.validation_reason
    state = selectors.problem_validation_state(problem)
    assert state["pending"] is False and "reference exploded on purpose" in state["message"]


@pytest.mark.parametrize(
    "source, expected",
    [(SYNTAX_ERROR, "line 6"), (MISSING_GET_INPUTS, "get_inputs")],
)
def test_the_sandbox_also_rejects_what_the_static_checks_catch(user, source, expected):
    # A source that reached the table without the web's checks (e.g. through the admin)
    # still gets a precise reason from the sandbox.
    problem = Problem.objects.create(name="Unchecked", source=source)
    queue.enqueue_validation(problem)
    problem = validate_next_job()
    assert problem.validation_status == Problem.Validation.INVALID
    assert expected in problem.validation_reason
