"""A problem no worker here can hold is refused at submit, with both numbers (searches/services/problem_fit.py)."""

import pytest
from django.urls import reverse
from django.utils import timezone

from searches.models import Problem, Worker
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
