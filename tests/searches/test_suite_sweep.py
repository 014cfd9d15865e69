"""Sweeps: a folder of solutions matched to a suite's problems by level and number, each
queued as a kernel on the real evaluation queue."""

import io

import pytest
from django.core.management import CommandError, call_command

from evaluation.models import EvaluationJob
from searches import services
from searches.models import Kernel

from .problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db

SOLUTION = SOFTMAX.replace("class Model(", "class ModelNew(")


@pytest.fixture
def suite(tmp_path):
    problems = tmp_path / "problems" / "level1"
    problems.mkdir(parents=True)
    for n in (1, 2):
        (problems / f"{n}_Softmax_{n}.py").write_text(f"# {n}\n" + SOFTMAX)
    return services.suite_import(user=None, suite_name="S", files=services.files_from_folder(tmp_path / "problems"),
                                 device="cpu").suite


@pytest.mark.parametrize(
    "path, expected",
    [("level1/19_ReLU/kernel.py", (1, 19, 0)), ("level2/3_Conv.py", (2, 3, 0)), ("notes/kernel.py", (None, None, 0)),
     ("run/level_1_problem_19_sample_3_kernel.py", (1, 19, 3))],
)
def test_solution_position(path, expected):
    assert services.solution_position(path) == expected


def test_a_run_folder_is_matched_by_level_and_number_and_queued(suite, tmp_path):
    run = tmp_path / "run"
    (run / "level1" / "1_Softmax_1").mkdir(parents=True)
    (run / "level1" / "1_Softmax_1" / "kernel.py").write_text(SOLUTION)
    (run / "level1" / "2_Softmax_2.py").write_text("print('no module class here')\n")
    (run / "level1" / "7_Other.py").write_text(SOLUTION)
    out = io.StringIO()
    call_command("sweep_solutions", str(run), "--suite", "S", stdout=out)  # the former name of rejudge
    assert "on “S”: 1 queued, 1 unmatched, 1 refused, of 3 files." in out.getvalue()
    assert "must define `class ModelNew" in out.getvalue()
    kernel = Kernel.objects.get()
    assert kernel.problem.name == "L1 #1 Softmax 1" and kernel.origin == Kernel.Origin.USER
    job = EvaluationJob.objects.get(kernel=kernel)
    assert (job.status, job.device, job.purpose) == ("queued", "cpu", "manual")


def test_sweeping_into_an_unknown_suite_says_so(tmp_path):
    with pytest.raises(CommandError, match="no suite named"):
        call_command("rejudge", str(tmp_path), "--suite", "nope", stdout=io.StringIO())


def test_a_sweep_queues_bulk_jobs_up_to_the_cap_and_refuses_the_rest_saying_why(suite, tmp_path, settings):
    from django.contrib.auth import get_user_model

    from evaluation.scheduling import Priority

    settings.MAX_QUEUED_JOBS_PER_USER = 1
    ada = get_user_model().objects.create_user("ada", password="pw-for-tests-only")
    files = [("level1/1_Softmax_1.py", SOLUTION.encode()), ("level1/2_Softmax_2.py", SOLUTION.encode())]
    rows = services.suite_sweep(user=ada, suite=suite, files=files)
    assert [row.outcome for row in rows] == ["queued", "refused"]
    assert rows[1].reason == ("not queued: you have 1 evaluation job queued or running, the cap per person; sweep "
                              "this file again when some have finished.")
    job = EvaluationJob.objects.get()
    assert (job.requested_by, job.priority, Kernel.objects.count()) == (ada, Priority.BULK, 1)
