"""Small things a new user trips on (issue 36): a cancelled kernel is not a failure, a fork is
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
    assert (kernel.status, kernel.reason_code, kernel.shown_status) == ("failed", "cancelled", "cancelled")
    page = client.get(reverse("kernel_detail", args=[kernel.code])).content.decode()
    assert '<span class="badge cancelled" id="kernel-status">Not evaluated (cancelled)</span>' in page
    assert "Evaluation failed" not in page
    search = client.get(reverse("search_detail", args=[cancelled["search"].code])).content.decode()
    assert "s-cancelled" in search and "Not evaluated (cancelled)" in search
    assert "1/1 correct" not in search and "0/1 correct" in search  # the crash counts, the cancel does not
    assert selectors.search_counts(search=cancelled["search"]) == {"correct": 1, "crashed": 1, "cancelled": 1}
    stats = selectors.search_idea_stats(selectors.search_tree(search=cancelled["search"]))
    assert (stats[0]["kernels"], stats[0]["evaluated"], stats[0]["waiting"]) == (2, 1, 0)


def test_a_worker_killing_failure_stays_a_failure(cancelled):
    other = d.kernel(problem=cancelled["search"].problem, status="pending", name="killer")
    job = queue.enqueue_kernel(other)
    services.job_fail(job=job, reason="it killed its worker three times")
    other.refresh_from_db()
    assert other.shown_status == "failed" and other.shown_status_label == "Evaluation failed"


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
