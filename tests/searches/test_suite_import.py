"""Suite imports: the 250 KernelBench fixtures through the real command, duplicates, refusals."""

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluation.models import EvaluationJob
from searches import services
from searches.models import Device, Problem, Suite, SuiteProblem

from . import dashboard_data as d
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
    assert {p.device for p in Problem.objects.all()} == {Device.CPU}  # what the workers here serve
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


# --- bounds on one import, and zips that lie ----------------------------------------------------


def zip_bytes(entries, compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, text in entries:
            archive.writestr(name, text)
    return buffer.getvalue()


def test_a_2000_file_zip_is_refused_whole_before_anything_is_read_or_saved():
    data = zip_bytes([(f"level1/{n}_P.py", f"# {n}\n" + SOFTMAX) for n in range(1, 2001)])
    with pytest.raises(Exception, match="This import holds 2000 problem files; one import takes at most 300"):
        services.files_from_zip(io.BytesIO(data))
    files = [(f"level1/{n}_P.py", (f"# {n}\n" + SOFTMAX).encode()) for n in range(1, 302)]
    with pytest.raises(Exception, match="holds 301 problem files"):
        services.suite_import(user=None, suite_name="S", files=files, validate=True)
    assert (Problem.objects.count(), Suite.objects.count(), EvaluationJob.objects.count()) == (0, 0, 0)


def test_an_import_over_the_byte_bound_is_refused_from_the_stated_sizes(settings):
    settings.SUITE_IMPORT_MAX_BYTES = 5000
    data = zip_bytes([(f"level1/{n}_P.py", f"# {n}\n" + SOFTMAX + "#" * 2000) for n in (1, 2, 3)])
    with pytest.raises(Exception, match="come to 7 KB uncompressed; one import takes at most 5 KB"):
        services.files_from_zip(io.BytesIO(data))


def test_an_entry_that_expands_like_a_zip_bomb_is_refused_unread():
    data = zip_bytes([("level1/1_Bomb.py", SOFTMAX + "#" * 150_000), ("level1/2_Fine.py", SOFTMAX)])
    (_, bomb), (_, fine) = services.files_from_zip(io.BytesIO(data))
    assert "expands" in " ".join(bomb.messages) and "refused unread as a possible zip bomb" in " ".join(bomb.messages)
    assert fine == SOFTMAX.encode()


def test_a_zip_with_too_many_entries_is_refused():
    data = zip_bytes([(f"docs/{n}.txt", "") for n in range(5001)])
    with pytest.raises(Exception, match="The zip holds 5001 entries; the limit is 5000"):
        services.files_from_zip(io.BytesIO(data))


def lie(data: bytes, name: bytes, *, size: int | None = None, crc: int | None = None) -> bytes:
    """The zip with `name`'s stated uncompressed size and/or CRC changed in both of its headers."""
    out = bytearray(data)
    for signature, size_at, crc_at, name_at in ((b"PK\x03\x04", 22, 14, 30), (b"PK\x01\x02", 24, 16, 46)):
        start = out.find(signature)
        while start >= 0 and out[start + name_at:start + name_at + len(name)] != name:
            start = out.find(signature, start + 1)
        if size is not None:
            out[start + size_at:start + size_at + 4] = size.to_bytes(4, "little")
        if crc is not None:
            out[start + crc_at:start + crc_at + 4] = crc.to_bytes(4, "little")
    return bytes(out)


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
@pytest.mark.parametrize("change, words", [
    (dict(size=100), "damaged or inconsistent"),  # states less than it holds
    (dict(size=5000), "states 5000 bytes but holds"),  # states more
    (dict(crc=1234), "damaged or inconsistent"),  # a bad checksum
])
def test_an_entry_that_lies_about_its_size_or_checksum_is_refused_and_the_rest_imports(compression, change, words):
    data = lie(zip_bytes([("level1/1_Liar.py", SOFTMAX), ("level1/2_Honest.py", SOFTMAX + "\n")], compression),
               b"level1/1_Liar.py", **change)
    files = services.files_from_zip(io.BytesIO(data))
    report = services.suite_import(user=None, suite_name="S", files=files)
    assert [row.outcome for row in report.rows] == ["refused", "accepted"]
    assert words in report.rows[0].reason and "Make the zip again" in report.rows[0].reason
    assert Problem.objects.count() == 1


def test_a_truncated_zip_member_is_refused_with_a_message():
    data = zip_bytes([("level1/1_Cut.py", SOFTMAX * 20), ("level1/2_Whole.py", SOFTMAX)])
    cut = data.find(b"PK\x03\x04", 4)  # where the second member begins
    truncated = data[:cut - 100] + data[cut:]  # the first member's data ends early
    (_, entry), _ = services.files_from_zip(io.BytesIO(truncated))
    assert "damaged or inconsistent" in " ".join(entry.messages)


# --- whose suite -----------------------------------------------------------------------------


def test_only_the_owner_or_an_administrator_adds_to_a_suite_others_get_their_own():
    from tests.searches import dashboard_data as d

    ada, bob, admin = d.user("ada"), d.user("bob"), d.user("root", is_staff=True)
    one = [("level1/1_A.py", SOFTMAX.encode())]
    mine = services.suite_import(user=ada, suite_name="KB", files=one, device="cpu")
    assert (mine.suite.name, mine.suite.created_by, mine.notices) == ("KB", ada, [])

    theirs = services.suite_import(user=bob, suite_name="KB", files=[("level1/2_B.py", (SOFTMAX + "\n").encode())])
    assert theirs.suite.name == "KB (bob)" and theirs.suite.created_by == bob
    assert theirs.notices == ["The suite “KB” is someone else's: only its owner or an administrator adds problems "
                              "to it. Your files went into your own suite “KB (bob)”."]
    kb = Suite.objects.get(name="KB")
    assert kb.members.count() == 1
    again = services.suite_import(user=bob, suite_name="KB", files=[("level1/3_C.py", (SOFTMAX + "\n\n").encode())])
    assert again.suite == theirs.suite and again.suite.members.count() == 2

    assert services.suite_import(user=ada, suite_name="KB", files=[("level1/4_D.py", b"# d\n" + one[0][1])]).suite == kb
    assert services.suite_import(user=admin, suite_name="KB", files=[("level1/5_E.py", b"# e\n" + one[0][1])]).suite == kb
    assert kb.members.count() == 3


# --- validations against the person's cap ----------------------------------------------------


def test_an_import_with_validation_queues_bulk_jobs_up_to_the_cap_and_stores_the_rest(settings):
    from evaluation.scheduling import Priority
    from tests.searches import dashboard_data as d

    settings.MAX_QUEUED_JOBS_PER_USER = 2
    ada = d.user("ada")
    files = [(f"level1/{n}_P.py", (f"# {n}\n" + SOFTMAX).encode()) for n in (1, 2, 3)]
    report = services.suite_import(user=ada, suite_name="S", files=files, device="cpu", validate=True)
    jobs = EvaluationJob.objects.filter(purpose="validate")
    assert [(job.requested_by, job.priority) for job in jobs] == [(ada, Priority.BULK)] * 2
    assert report.counts["accepted"] == 3 and report.rows[2].reason.startswith("stored, not validated")
    assert report.notices == ["1 new problem was stored without validation: you have 2 evaluation jobs queued or "
                              "running, the cap per person. Validate the rest from the suite page (“Validate stored "
                              "problems”) when some have finished."]


def test_a_level_folder_given_itself_keeps_its_level():
    out = io.StringIO()
    call_command("import_problems", str(FIXTURES / "level1"), "--suite", "L1", stdout=out)
    members = SuiteProblem.objects.filter(suite__name="L1")
    assert members.count() == 100 and set(members.values_list("level", flat=True)) == {1}
    assert members.get(number=19).file_name.startswith("level1/19_")


def test_device_on_a_duplicate_says_the_stored_problem_keeps_its_device(tmp_path):
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_Softmax.py").write_text(SOFTMAX)
    call_command("import_problems", str(tmp_path), "--suite", "A", "--device", "cuda", stdout=io.StringIO())
    out = io.StringIO()
    call_command("import_problems", str(tmp_path), "--suite", "B", "--device", "cpu", stdout=out)
    assert ("duplicate level1/1_Softmax.py: same source as “L1 #1 Softmax”; kept on cuda, as stored: the device "
            "asked for (cpu) applies to new problems only") in out.getvalue()
    assert Problem.objects.get().device == Device.CUDA


LEVEL4 = '''import torch
from transformers import AutoModelForCausalLM, AutoConfig

class Model(torch.nn.Module):
    def __init__(self, model_name, config):
        super().__init__()
        self.model = AutoModelForCausalLM.from_pretrained(model_name, config=config)

    def forward(self, x):
        return self.model(x).logits

model_name = "google/bigbird-roberta-base"
config = AutoConfig.from_pretrained(model_name)

def get_inputs():
    return [torch.randint(0, 100, (1, 32))]

def get_init_inputs():
    return [model_name, config]
'''


def test_a_level_4_problem_is_refused_unless_its_models_are_on_disk(tmp_path, monkeypatch):
    files = [("level4/10_bigbird.py", LEVEL4.encode())]
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    row = services.suite_import(user=None, suite_name="L4", files=files).rows[0]
    assert row.outcome == "refused" and "downloads google/bigbird-roberta-base from the Hugging Face Hub" in row.reason
    (tmp_path / "models--google--bigbird-roberta-base").mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert services.suite_import(user=None, suite_name="L4", files=files).rows[0].outcome == "accepted"


def test_the_import_device_defaults_to_what_the_workers_serve(client, settings):
    client.force_login(d.user())
    assert 'value="cpu" selected' in client.get(reverse("suite_import")).content.decode()
    settings.RUNNER_DEVICE = "cuda"
    assert 'value="cuda" selected' in client.get(reverse("suite_import")).content.decode()
