"""Small things a new user trips on: a cancelled kernel is not a failure, a fork is
named after its source, messages expire, pause says what it does, the kernel form helps write a
kernel, revoking a share link asks first, and the dashboards' counts link to their lists."""

import pytest
from django.urls import reverse

from evaluation import queue
from searches import selectors, services
from searches.models import Kernel, Search
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(client):
    user = d.user()
    client.force_login(user)
    return user


@pytest.fixture
def cancelled(alice):
    """A search cancelled with one kernel judged correct, one queued, and one that crashed."""
    p = d.problem()
    s = d.search(problem=p, created_by=alice)
    seed = d.kernel(problem=p, search=s, round=0, origin="seed", name="seed kernel")
    idea = d.idea(search=s, parent_kernel=seed, title="Tile it")
    queued = d.kernel(problem=p, search=s, idea=idea, parent=seed, status="pending", name="never judged")
    d.kernel(problem=p, search=s, idea=idea, parent=seed, status="crashed", name="crashed one")
    queue.enqueue_kernel(queued)
    services.search_cancel(search=s, user=alice)
    queued.refresh_from_db()
    return {"search": s, "queued": queued, "idea": idea}


def test_a_kernel_dropped_by_a_cancel_is_grey_not_evaluated_and_no_failure(client, cancelled):
    kernel = cancelled["queued"]
    assert (kernel.status, kernel.reason_code) == ("failed", "cancelled")
    page = client.get(reverse("kernel_detail", args=[kernel.code])).content.decode()
    assert '<span class="badge cancelled" id="kernel-status">Not evaluated (cancelled)</span>' in page
    assert "Evaluation failed" not in page
    search = client.get(reverse("search_detail", args=[cancelled["search"].code])).content.decode()
    assert "s-cancelled" in search and "Not evaluated (cancelled)" in search
    assert "1/1 correct" not in search and "0/1 correct" in search  # the crash counts, the cancel does not
    assert selectors.search_counts(search=cancelled["search"]) == {"correct": 1, "crashed": 1, "cancelled": 1}
    stats = selectors.search_idea_stats(selectors.search_tree(search=cancelled["search"]))
    assert (stats[0]["kernels"], stats[0]["evaluated"], stats[0]["waiting"]) == (2, 1, 0)


def test_a_worker_killing_failure_stays_a_failure(client, cancelled):
    other = d.kernel(problem=cancelled["search"].problem, status="pending", name="killer")
    job = queue.enqueue_kernel(other)
    services.job_fail(job=job, reason="it killed its worker three times")
    other.refresh_from_db()
    page = client.get(reverse("kernel_detail", args=[other.code])).content.decode()
    assert '<span class="badge failed" id="kernel-status">Evaluation failed</span>' in page


def test_a_fork_is_named_after_its_source(client, alice):
    p = d.problem(family="softmax")  # the playbook serves it
    s = d.search(problem=p, created_by=alice, name="softmax sweep", status="completed")
    d.kernel(problem=p, search=s, round=0, origin="seed", name="seed")
    client.post(reverse("search_fork", args=[s.code]))
    fork = Search.objects.get(forked_from=s)
    assert fork.name == "softmax sweep (fork)"
    unnamed = d.search(problem=p, created_by=alice, status="completed")
    d.kernel(problem=p, search=unnamed, round=0, origin="seed", name="seed 2")
    client.post(reverse("search_fork", args=[unnamed.code]))
    assert Search.objects.get(forked_from=unnamed).name == f"{unnamed} (fork)"


def test_pause_says_queued_candidates_still_finish(client, alice):
    s = d.search(problem=d.problem(), created_by=alice)
    page = client.get(reverse("search_detail", args=[s.code])).content.decode()
    assert 'id="btn-pause" title="Stop proposing: queued candidates still finish;' in page
    page = client.post(reverse("search_pause", args=[s.code]), follow=True).content.decode()
    assert "Search paused: queued candidates still finish; nothing new is proposed until it is resumed." in page
    s.refresh_from_db()
    assert s.stop_reason.endswith(": queued candidates still finish; nothing new is proposed until it is resumed")


def test_notes_expire_and_errors_stay(client, alice):
    s = d.search(problem=d.problem(), created_by=alice, status="completed")
    page = client.post(reverse("search_pause", args=[s.code]), follow=True).content.decode()
    assert '<li class="msg-error">Could not pause the search' in page  # no data-expires: it stays
    running = d.search(problem=s.problem, created_by=alice)
    page = client.post(reverse("search_pause", args=[running.code]), follow=True).content.decode()
    assert '<li class="msg-success" data-expires>Search paused' in page
    assert 'src="/static/js/messages.js"' in page


def test_revoking_a_share_link_asks_first(client, alice):
    p = d.problem()
    d.kernel(problem=p, name="ranked")
    client.post(reverse("share_leaderboard", args=[p.code]), {"label": "for the review"})
    page = client.get(reverse("leaderboard", args=[p.code])).content.decode()
    assert 'data-confirm="Revoke the share link “for the review”? Whoever holds it loses access at once' in page


GOOD_KERNEL = d.KERNEL_SOURCE.format(tag=1)


def test_the_kernel_form_links_the_format_and_offers_a_template_and_an_upload(client, alice):
    p = d.problem(source=d.PROBLEM_SOURCE)
    url = reverse("problem_kernel_new", args=[p.code])
    page = client.get(url).content.decode()
    assert f'href="{reverse("doc", args=["kernel-format"])}#kernel"' in page
    assert 'enctype="multipart/form-data"' in page and 'type="file" name="source_file"' in page
    assert 'id="kernel-template" href="?template=1"' in page and "class ModelNew" not in page
    page = client.get(url, {"template": 1}).content.decode()
    assert "class ModelNew(nn.Module)" in page and "def forward(self, x):" in page and "_lib.kernel(" in page


def test_the_template_follows_the_problems_arguments_and_device():
    p = d.problem(source="import torch\nclass Model(torch.nn.Module):\n    def __init__(self, dim: int, eps=1e-5):\n"
                         "        super().__init__()\n    def forward(self, a, b):\n        return a @ b\n"
                         "def get_inputs():\n    return []\ndef get_init_inputs():\n    return [1]\n", device="cuda")
    source = selectors.kernel_template(p)
    assert "def __init__(self, dim: int, eps=1e-05):" in source and "def forward(self, a, b):" in source
    assert "_ext.run(a.contiguous())" in source and "load_inline(" in source
    compile(source, "kernel.py", "exec")  # the skeleton itself is Python


def test_a_kernel_with_a_syntax_error_is_refused_by_the_form(client, alice):
    p = d.problem()
    url = reverse("problem_kernel_new", args=[p.code])
    response = client.post(url, {"source": "class ModelNew(nn.Module)\n    pass\n"})
    assert response.status_code == 200
    assert "Syntax error on line 1" in response.content.decode()
    response = client.post(url, {"source": "import torch\n"})
    assert "must define `class ModelNew(nn.Module)`" in response.content.decode()
    assert not Kernel.objects.filter(problem=p, origin="user").exists()


def test_a_kernel_file_can_be_uploaded(client, alice):
    from django.core.files.uploadedfile import SimpleUploadedFile

    p = d.problem()
    url = reverse("problem_kernel_new", args=[p.code])
    upload = SimpleUploadedFile("tiled_relu.py", GOOD_KERNEL.encode(), content_type="text/x-python")
    response = client.post(url, {"source_file": upload, "source": ""})
    kernel = Kernel.objects.get(problem=p, origin="user")
    assert response.status_code == 302 and kernel.name == "tiled relu" and kernel.source == GOOD_KERNEL
    both = SimpleUploadedFile("k.py", GOOD_KERNEL.encode())
    page = client.post(url, {"source_file": both, "source": GOOD_KERNEL}).content.decode()
    assert "You pasted source and uploaded a file: keep one of them." in page


def test_the_workers_counts_link_to_their_jobs_and_a_cancel_is_no_failure(client, cancelled):
    crashed = d.kernel(problem=cancelled["search"].problem, status="pending", name="killed its worker")
    services.job_fail(job=queue.enqueue_kernel(crashed), reason="it killed its worker three times")
    waiting = d.kernel(problem=cancelled["search"].problem, status="pending", name="still waiting")
    queue.enqueue_kernel(waiting)
    page = client.get(reverse("worker_list")).content.decode()
    failed_url = reverse("job_list", args=["cpu", "failed"])
    assert f'<a href="{failed_url}" aria-label="CPU failed (24 h): 1">1</a>' in page  # the cancel is not counted
    assert f'<a href="{reverse("job_list", args=["cpu", "queued"])}" aria-label="CPU queued: 1">1</a>' in page
    page = client.get(failed_url).content.decode()
    assert "killed its worker" in page and "it killed its worker three times" in page
    assert "never judged" not in page
    page = client.get(reverse("job_list", args=["cpu", "queued"])).content.decode()
    assert "still waiting" in page and "killed its worker" not in page
    assert client.get(reverse("job_list", args=["tpu", "failed"])).status_code == 404
    assert client.get(reverse("job_list", args=["cpu", "everything"])).status_code == 404


def test_a_problems_search_count_opens_its_searches(client, alice):
    p, other = d.problem(name="mine"), d.problem(name="other")
    d.search(problem=p, created_by=alice, name="on mine")
    d.search(problem=other, created_by=alice, name="on other")
    page = client.get(reverse("problem_list")).content.decode()
    url = f'{reverse("search_list")}?problem={p.code}&versions=all'
    assert f'<a href="{url.replace("&", "&amp;")}" title="Its searches, every version">1</a>' in page
    page = client.get(url).content.decode()
    assert "Searches on mine (every version)" in page and "on mine" in page and "on other" not in page
    page = client.get(reverse("search_list"), {"problem": p.code}).content.decode()  # the versions table's count
    assert "Searches on mine v1" in page and "on other" not in page
    assert client.get(reverse("search_list"), {"problem": "nonsense"}).status_code == 404


def test_a_suites_verdict_counts_open_the_problems_they_count(client, alice):
    from searches.models import Suite, SuiteProblem

    suite = Suite.objects.create(name="KB L1", created_by=alice)
    for number, (name, status) in enumerate((("fast one", "correct"), ("wrong one", "incorrect")), start=1):
        p = d.problem(name=name)
        SuiteProblem.objects.create(suite=suite, problem=p, level=1, number=number)
        kernel = d.kernel(problem=p, status=status, name=f"{name} kernel")
        Kernel.objects.filter(pk=kernel.pk).update(device_name="NVIDIA H200")  # judged on the GPU model scored
    url = reverse("suite_detail", args=[suite.code])
    page = client.get(url).content.decode()
    assert f'Correct <a href="{url}?outcome=correct#per-problem-1">1</a>' in page
    assert f'incorrect <a href="{url}?outcome=incorrect#per-problem-1">1</a>' in page
    page = client.get(url, {"outcome": "incorrect"}).content.decode()
    table = page.split('id="per-problem-1"')[1].split("</table>")[0]
    assert "wrong one" in table and "fast one" not in table
    assert f'<a href="{url}#per-problem-1">Show every problem</a>' in page
    assert "outcome=incorrect" in page.split('data-url="')[1].split('"')[0]  # the live refresh keeps the filter
    page = client.get(url, {"outcome": "<b>nonsense"}).content.decode()  # unknown: every problem, no notice
    assert "Show every problem" not in page and "fast one" in page and "<b>nonsense" not in page


def test_a_suites_search_count_opens_those_searches(client, alice):
    from searches.models import Suite, SuiteProblem

    suite = Suite.objects.create(name="KB L2", created_by=alice)
    member, outsider = d.problem(name="member"), d.problem(name="outsider")
    SuiteProblem.objects.create(suite=suite, problem=member, level=2, number=1)
    d.search(problem=member, created_by=alice, name="on the member")
    d.search(problem=outsider, created_by=alice, name="elsewhere")
    page = client.get(reverse("suite_detail", args=[suite.code])).content.decode()
    url = f'{reverse("search_list")}?suite={suite.code}'
    assert f'<a href="{url}">1</a> search on these problems' in page
    page = client.get(url).content.decode()
    assert "Searches on the problems of KB L2" in page and "on the member" in page and "elsewhere" not in page
