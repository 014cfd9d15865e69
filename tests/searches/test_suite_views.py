"""Suite pages through the test client: a zip upload and its report, several files in one
POST, one count against the work rate limit, the scores page and its exports."""

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.models import EvaluationJob
from evaluation.scheduling import Priority
from lib import ratelimit
from searches.models import Kernel, Problem, Suite, SuiteProblem

from .problem_samples import SOFTMAX, SYNTAX_ERROR

pytestmark = pytest.mark.django_db

LEVEL1 = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"
TEN = sorted(LEVEL1.glob("*.py"), key=lambda p: int(p.name.split("_")[0]))[:10]


@pytest.fixture
def client_in(client):
    client.force_login(get_user_model().objects.create_user("ada", password="pw-for-tests-only"))
    return client


def zip_of(paths, broken=False):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in paths:
            archive.write(path, f"level1/{path.name}")
        if broken:
            archive.writestr("level1/11_Broken.py", SYNTAX_ERROR)
    return SimpleUploadedFile("level1.zip", buffer.getvalue(), content_type="application/zip")


def post_import(client, files, name="KB L1", **extra):
    return client.post(reverse("suite_import"), {"name": name, "files": files, "device": "cuda", **extra})


def test_a_zip_of_ten_shows_the_report_and_stores_ten_unvalidated_cuda_problems(client_in):
    response = post_import(client_in, [zip_of(TEN, broken=True)])
    page = response.content.decode()
    assert response.status_code == 200
    assert "10 accepted, 0 duplicates, 1 refused, of 11 files." in page
    assert "level1/11_Broken.py" in page and "syntax" in page.lower()
    assert Problem.objects.count() == 10 and set(Problem.objects.values_list("device", flat=True)) == {"cuda"}
    assert sorted(SuiteProblem.objects.values_list("number", flat=True)) == list(range(1, 11))
    again = post_import(client_in, [zip_of(TEN)]).content.decode()
    assert "0 accepted, 10 duplicates, 0 refused, of 10 files." in again
    assert Problem.objects.count() == 10


def test_several_files_in_one_post_are_all_kept_and_count_once_against_the_limit(client_in, monkeypatch):
    monkeypatch.setattr(ratelimit, "SANDBOX_WORK", ratelimit.Limit("work", 2, 60, "requests that start work"))
    files = [SimpleUploadedFile(p.name, p.read_bytes()) for p in TEN[:3]]
    assert "3 accepted" in post_import(client_in, files).content.decode()
    assert post_import(client_in, [SimpleUploadedFile("x.py", SOFTMAX.encode())]).status_code == 200
    assert post_import(client_in, [SimpleUploadedFile("y.py", SOFTMAX.encode())]).status_code == 429


def test_an_upload_that_is_not_a_zip_says_so(client_in):
    response = post_import(client_in, [SimpleUploadedFile("x.zip", b"not a zip")])
    assert "Not a zip file" in response.content.decode() and not Suite.objects.exists()


def test_suite_page_and_exports_show_the_scores(client_in):
    post_import(client_in, [zip_of(TEN[:2])])
    suite = Suite.objects.get()
    first, second = [m.problem for m in suite.members.order_by("number")]
    best = Kernel.objects.create(problem=first, status="correct", speedup_vs_eager=4.0, speedup_vs_compile=2.5,
                                 device_name="NVIDIA H200")
    Kernel.objects.create(problem=second, status="correct", speedup_vs_eager=9.0, device_name="NVIDIA H200",
                          quarantined=True)
    page = client_in.get(reverse("suite_detail", args=[suite.code])).content.decode()
    assert "NVIDIA H200" in page and reverse("kernel_detail", args=[best.code]) in page
    assert "50% (1/2)" in page  # fast_1 vs eager: the quarantined 9x is not a win
    assert f'quarantined <a href="{reverse("suite_detail", args=[suite.code])}?outcome=quarantined#per-problem-1">1</a>' in page
    data = json.loads(client_in.get(reverse("suite_json", args=[suite.code])).content)
    score = data["scores"][0]
    assert score["fast_p"]["eager"]["fast_2"] == {"count": 1, "fraction": 0.5}
    assert score["geomean"]["eager"] == pytest.approx(4.0)
    rows = list(csv.DictReader(io.StringIO(client_in.get(reverse("suite_csv", args=[suite.code])).content.decode())))
    assert [(r["number"], r["outcome"], r["best_kernel_code"]) for r in rows] == [
        ("1", "correct", str(best.code)), ("2", "quarantined", "")]


def test_a_suite_without_results_lists_its_problems_as_stored_not_validated(client_in):
    post_import(client_in, [zip_of(TEN[:1])])
    page = client_in.get(reverse("suite_detail", args=[Suite.objects.get().code])).content.decode()
    assert "Stored, not yet validated" in page and "L1 #1 Square matrix multiplication" in page


def test_suite_pages_need_a_login(client):
    assert client.get(reverse("suite_list"))["Location"].startswith("/login/")
    assert client.post(reverse("suite_import"))["Location"].startswith("/login/")


def test_validate_stored_problems_queues_each_once_below_a_persons_validation(client_in):
    post_import(client_in, [zip_of(TEN[:3])])
    suite = Suite.objects.get()
    single = Problem.objects.get(name="L1 #1 Square matrix multiplication")
    client_in.post(reverse("problem_revalidate", args=[single.code]))  # a person asked for this one already
    response = client_in.post(reverse("suite_validate", args=[suite.code]), follow=True)
    assert "Queued the validation of 2 stored problems." in response.content.decode()
    jobs = EvaluationJob.objects.filter(purpose="validate")
    assert sorted(jobs.values_list("priority", flat=True)) == [Priority.BULK] * 2 + [Priority.INTERACTIVE]
    client_in.post(reverse("suite_validate", args=[suite.code]))
    assert jobs.count() == 3  # nothing queued twice
    page = client_in.get(reverse("suite_detail", args=[suite.code])).content.decode()
    assert "Stored, not yet validated" not in page


# --- bounds, lying zips, whose suite, and the person's caps --------------------------------------


def upload(entries, name="level1.zip"):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for entry, text in entries:
            archive.writestr(entry, text)
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/zip")


def test_a_2000_file_zip_gets_the_limit_and_saves_nothing(client_in):
    files = upload([(f"level1/{n}_P.py", f"# {n}\n" + SOFTMAX) for n in range(1, 2001)])
    response = post_import(client_in, [files], validate="on")
    page = response.content.decode()
    assert response.status_code == 200 and "This import holds 2000 problem files; one import takes at most 300" in page
    assert (Problem.objects.count(), Suite.objects.count(), EvaluationJob.objects.count()) == (0, 0, 0)


def test_a_zip_entry_with_a_false_size_gets_a_message_not_a_500(client_in):
    data = bytearray(upload([("level1/1_Liar.py", SOFTMAX), ("level1/2_Honest.py", SOFTMAX + "\n")]).read())
    for signature, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # the first entry in both headers
        start = data.find(signature)
        data[start + size_at:start + size_at + 4] = (100).to_bytes(4, "little")
    response = post_import(client_in, [SimpleUploadedFile("lying.zip", bytes(data))])
    page = response.content.decode()
    assert response.status_code == 200 and "1 accepted, 0 duplicates, 1 refused, of 2 files." in page
    assert "the zip entry is damaged or inconsistent (Bad CRC-32" in page


def test_importing_under_someone_elses_suite_name_makes_ones_own(client_in):
    client = client_in
    post_import(client, [zip_of(TEN[:2])])
    client.force_login(get_user_model().objects.create_user("bob", password="pw-for-tests-only"))
    page = post_import(client, [zip_of(TEN[2:4])]).content.decode()
    assert "The suite “KB L1” is someone else&#x27;s" in page and "your own suite “KB L1 (bob)”" in page
    assert Suite.objects.get(name="KB L1").members.count() == 2
    assert Suite.objects.get(name="KB L1 (bob)").members.count() == 2
    kb = Suite.objects.get(name="KB L1")
    assert ">Add problems<" not in client.get(reverse("suite_detail", args=[kb.code])).content.decode()
    client.force_login(kb.created_by)
    assert ">Add problems<" in client.get(reverse("suite_detail", args=[kb.code])).content.decode()


def test_validating_a_suite_counts_every_job_against_the_cap(client_in, settings):
    settings.MAX_QUEUED_JOBS_PER_USER = 2
    post_import(client_in, [zip_of(TEN[:3])])
    suite = Suite.objects.get()
    page = client_in.post(reverse("suite_validate", args=[suite.code]), follow=True).content.decode()
    assert "Queued the validation of 2 stored problems." in page
    assert "1 more waits: you have 2 evaluation jobs queued or running, the cap per person." in page
    refused = client_in.post(reverse("suite_validate", args=[suite.code]))
    text = " ".join(refused.content.decode().split())
    assert refused.status_code == 429 and "You have 2 evaluation jobs queued or running; the cap is 2 per person." in text
    assert EvaluationJob.objects.count() == 2
