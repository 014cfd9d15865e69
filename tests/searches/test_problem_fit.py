"""A problem no worker here can hold is refused at submit, with both numbers (searches/services/problem_fit.py);
whether the built-in playbook serves a problem is said before a search starts."""

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation.models import Worker
from searches.models import Problem
from tests.searches import dashboard_data as d
from tests.searches.problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db

HUGE = SOFTMAX.replace("batch_size = 16\ndim = 256", "batch_size = 40000\ndim = 1000000")  # 160 GB of float32
UNREADABLE = SOFTMAX.replace("torch.randn(batch_size, dim)", "torch.randn(*shape())")


def submit(client, source, device):
    return client.post(reverse("problem_create"), {"name": "big", "source": source, "device": device}, follow=True)


def test_a_160_gb_problem_is_refused_at_submit_with_both_numbers(client):
    client.force_login(d.user())
    Worker.objects.create(name="h200", device="cuda", heartbeat_at=timezone.now(),
                          device_facts={"memory_bytes": 150_000_000_000})
    html = submit(client, HUGE, "cuda").content.decode()
    assert "Too large for the workers here: its inputs take 160.0 GB" in html
    assert "640.0 GB" in html and "150.0 GB the largest cuda worker has" in html and "invalid" not in html.lower()
    assert not Problem.objects.exists()
    html = submit(client, HUGE, "cpu").content.decode()  # the CPU sandbox's 8 GB
    assert "8.6 GB the largest cpu worker has" in html and not Problem.objects.exists()


def test_no_worker_seen_or_an_unknown_size_is_accepted_and_said(client):
    client.force_login(d.user())
    submit(client, HUGE, "cuda")  # no CUDA worker has reported: nothing to compare with
    html = submit(client, UNREADABLE, "cpu").content.decode()
    assert "could not be read from the source" in html
    assert Problem.objects.count() == 2


def test_the_problem_page_and_the_search_form_say_whether_the_playbook_serves_it(client):
    client.force_login(d.user())
    served = d.problem(family="softmax", device="cpu")
    unknown = d.problem(name="L2 norm", family="", device="cpu")
    page = client.get(reverse("problem_detail", args=[served.code])).content.decode()
    assert "Serves this problem's family offline" in page
    page = client.get(reverse("problem_detail", args=[unknown.code])).content.decode()
    assert "Not supported by the built-in kernels: " in page and reverse("problem_kernel_new", args=[unknown.code]) in page
    form = client.get(reverse("search_new", args=[unknown.code])).content.decode()
    assert 'id="playbook-support"' in form
    assert 'id="playbook-support"' not in client.get(reverse("search_new", args=[served.code])).content.decode()
