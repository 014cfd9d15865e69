"""Suite imports: the 250 KernelBench fixtures through the real command, duplicates, refusals."""

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from searches import services
from searches.models import Device, EvaluationJob, Problem, Suite, SuiteProblem

from .problem_samples import SOFTMAX, SYNTAX_ERROR

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())["problems"]


def run_import(*args):
    out = io.StringIO()
    call_command("import_problems", str(FIXTURES), "--suite", "KernelBench L1-3", *args, stdout=out)
    return out.getvalue()


def test_the_250_kernelbench_problems_import_with_levels_numbers_and_no_validation_queued():
    output = run_import()
    suite = Suite.objects.get(name="KernelBench L1-3")
    members = {(m.file_name): m for m in SuiteProblem.objects.filter(suite=suite).select_related("problem")}
    assert len(members) == 250 == Problem.objects.count()
    for entry in MANIFEST:
        member = members[entry["file"]]
        assert (member.level, member.number) == (entry["level"], entry["number"])
        # Stored byte for byte: the source's hash is the manifest's.
        assert services.suites.source_sha256(member.problem.source) == entry["sha256"]
    assert {p.device for p in Problem.objects.all()} == {Device.CUDA}
    assert set(Problem.objects.values_list("validation_status", flat=True)) == {Problem.Validation.PENDING}
    assert not EvaluationJob.objects.exists()
    assert members["level1/1_Square_matrix_multiplication_.py"].problem.name == "L1 #1 Square matrix multiplication"
    assert not Problem.objects.filter(description="").exists()
    # refresh.py sits beside the problems: refused with the reason, not stored.
    assert "250 accepted, 0 duplicates, 1 refused, of 251 files" in output
    assert "refused   refresh.py: The source does not define Model" in output
    assert "level3/48_Mamba2ReturnY.py: needs einops" in output or _einops_installed()


def _einops_installed():
    import importlib.util

    return importlib.util.find_spec("einops") is not None


def test_a_reimport_reports_250_duplicates_and_creates_nothing():
    run_import()
    problems, members = Problem.objects.count(), SuiteProblem.objects.count()
    output = run_import()
    assert "0 accepted, 250 duplicates, 1 refused" in output
    assert output.count("duplicate ") == 250
    assert (Problem.objects.count(), SuiteProblem.objects.count(), Suite.objects.count()) == (problems, members, 1)


def test_a_duplicate_joins_another_suite_without_a_new_problem(tmp_path):
    existing = services.problem_create(user=None, name="Softmax", source=SOFTMAX)
    (tmp_path / "level2").mkdir()
    (tmp_path / "level2" / "7_Softmax_again.py").write_text(SOFTMAX)
    (tmp_path / "level2" / "8_Broken.py").write_text(SYNTAX_ERROR)
    report = services.suite_import(user=None, suite_name="Mine", files=services.files_from_folder(tmp_path))
    assert [(row.file, row.outcome) for row in report.rows] == [
        ("level2/7_Softmax_again.py", "duplicate"), ("level2/8_Broken.py", "refused")]
    assert "syntax" in report.rows[1].reason.lower()
    assert Problem.objects.count() == 1
    assert list(report.suite.members.values_list("problem_id", "level", "number")) == [(existing.pk, 2, 7)]


def test_validate_option_queues_one_validation_per_new_problem(tmp_path):
    (tmp_path / "1_A.py").write_text(SOFTMAX)
    (tmp_path / "2_B.py").write_text(SOFTMAX.replace("dim=", "dim ="))
    call_command("import_problems", str(tmp_path), "--suite", "S", "--validate", "--device", "cpu", stdout=io.StringIO())
    jobs = EvaluationJob.objects.filter(purpose=EvaluationJob.Purpose.VALIDATE)
    assert jobs.count() == 2 and set(jobs.values_list("device", flat=True)) == {"cpu"}


def test_zip_entries_are_read_in_kernelbench_order_and_bad_zips_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("level1/10_B.py", SOFTMAX)
        archive.writestr("level1/9_A.py", SOFTMAX + "\n")
        archive.writestr("README.md", "not a problem")
    files = services.files_from_zip(io.BytesIO(buffer.getvalue()))
    assert [name for name, _ in files] == ["level1/9_A.py", "level1/10_B.py"]
    with pytest.raises(Exception, match="Not a zip file"):
        services.files_from_zip(io.BytesIO(b"plain text"))


@pytest.mark.parametrize(
    "path, expected",
    [
        ("level1/19_ReLU.py", (1, 19, "ReLU")),
        ("runs/level_3/kernels/5_AlexNet.py", (3, 5, "AlexNet")),
        ("12_Gemm_Multiply_LeakyReLU.py", (None, 12, "Gemm Multiply LeakyReLU")),
        ("softmax.py", (None, None, "softmax")),
    ],
)
def test_kernelbench_position(path, expected):
    assert services.kernelbench_position(path) == expected


def test_the_command_says_what_is_wrong_with_its_path(tmp_path):
    with pytest.raises(CommandError, match="no .py problem files"):
        call_command("import_problems", str(tmp_path), "--suite", "S", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_problems", str(tmp_path / "nope"), "--suite", "S", stdout=io.StringIO())


def test_a_problem_importing_a_missing_module_is_stored_and_names_it():
    source = "import kernellab_absent_module\nfrom torch import nn\nimport os\n" + SOFTMAX
    report = services.suite_import(user=None, suite_name="S", files=[("level1/1_Needs.py", source.encode())])
    [row] = report.rows
    assert (row.outcome, row.missing_modules) == ("accepted", ["kernellab_absent_module"])


def test_a_zip_entry_over_the_size_limit_is_refused_unread(settings):
    settings.PROBLEM_SOURCE_MAX_BYTES = 1000
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("level1/1_Big.py", SOFTMAX + "#" * 5000)
        archive.writestr("level1/2_Small.py", SOFTMAX)  # 351 bytes
    files = services.files_from_zip(io.BytesIO(buffer.getvalue()))
    report = services.suite_import(user=None, suite_name="S", files=files)
    assert [row.outcome for row in report.rows] == ["refused", "accepted"]
    assert "the limit is 1000 bytes" in report.rows[0].reason
