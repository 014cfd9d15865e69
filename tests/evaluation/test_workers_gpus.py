"""The Workers page with several GPUs: each GPU's model and memory from the facts its worker
recorded, its jobs per minute over the recent window, every job it holds a live lease on, and one
line per GPU model."""

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from evaluation import selectors
from evaluation.devices import record_device_facts
from evaluation.models import EvaluationJob, Worker
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

H200_FACTS = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "devices" / "h200.json").read_text())
H100_FACTS = {**H200_FACTS, "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85520809984, "uuid": "h100-uuid"}


def ago(**kwargs):
    return timezone.now() - timedelta(**kwargs)


def gpu_worker(name, facts, *, started=None):
    worker = Worker.objects.create(name=name, host="gpu-host", pid=1, device="cuda", device_name=facts.get("name", ""),
                                   device_facts=facts, heartbeat_at=timezone.now())
    Worker.objects.filter(pk=worker.pk).update(started_at=started or ago(hours=1))  # auto_now_add ignores a value
    return worker


def finished(problem, owner, *, minutes_ago, status="done"):
    return EvaluationJob.objects.create(problem=problem, device="cuda", status=status, lease_owner=owner,
                                        finished_at=ago(minutes=minutes_ago))


def held(problem, owner, kernel=None, *, expires_in=300):
    return EvaluationJob.objects.create(problem=problem, kernel=kernel, device="cuda", status="leased",
                                        purpose="search" if kernel else "validate", lease_owner=owner,
                                        started_at=timezone.now(), lease_expires_at=timezone.now() + timedelta(seconds=expires_in))


def rows():
    return {row["worker"].name: row for row in selectors.worker_overview()["workers"]}


def test_jobs_per_minute_count_the_finished_jobs_of_the_recent_window_only():
    p = d.problem()
    gpu_worker("host-cuda-gpu0", H200_FACTS)
    for minutes in (1, 2, 3, 9):
        finished(p, "host-cuda-gpu0", minutes_ago=minutes)
    finished(p, "host-cuda-gpu0", minutes_ago=30)  # outside the window
    finished(p, "host-cuda-gpu0", minutes_ago=1, status="failed")  # not a job done
    finished(p, "host-cuda-gpu1", minutes_ago=1)  # another GPU's
    window = selectors.THROUGHPUT_WINDOW.total_seconds() / 60
    assert rows()["host-cuda-gpu0"]["jobs_per_minute"] == pytest.approx(4 / window)


def test_a_young_worker_is_measured_over_its_life_not_the_whole_window():
    p = d.problem()
    gpu_worker("host-cuda-gpu0", H200_FACTS, started=ago(minutes=2))
    for _ in range(6):
        finished(p, "host-cuda-gpu0", minutes_ago=1)
    assert rows()["host-cuda-gpu0"]["jobs_per_minute"] == pytest.approx(3.0, rel=0.02)


def test_every_job_a_worker_holds_a_live_lease_on_is_listed():
    p = d.problem()
    s = d.search(problem=p)
    gpu_worker("host-cuda-gpu0", H200_FACTS)
    first = held(p, "host-cuda-gpu0", d.kernel(problem=p, search=s, status="evaluating", run=False, name="one"))
    second = held(p, "host-cuda-gpu0", d.kernel(problem=p, search=s, status="evaluating", run=False, name="two"))
    held(p, "host-cuda-gpu0", expires_in=-5)  # ran out: the job is anyone's now
    row = rows()["host-cuda-gpu0"]
    assert [job.id for job in row["jobs"]] == [first.id, second.id] and row["job"] == first


def test_the_page_shows_each_gpu_its_model_memory_throughput_and_jobs_and_a_line_per_model(client):
    client.force_login(d.user())
    p = d.problem(name="Softmax")
    gpu_worker("host-cuda-gpu0", H200_FACTS)
    gpu_worker("host-cuda-gpu1", H200_FACTS)
    gpu_worker("other-cuda-gpu0", H100_FACTS)
    for minutes in range(10):
        finished(p, "host-cuda-gpu0", minutes_ago=minutes + 0.5)
    k = d.kernel(problem=p, status="evaluating", run=False, name="warp-shuffle")
    held(p, "host-cuda-gpu1", k)
    overview = selectors.worker_overview()
    models = {line["model"]: line for line in overview["gpu_models"]}
    assert sorted(models) == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    assert (models["NVIDIA H200"]["gpus"], models["NVIDIA H200"]["running"]) == (2, 1)
    assert models["NVIDIA H200"]["jobs_per_minute"] == pytest.approx(1.0)
    html = client.get(reverse("worker_list")).content.decode()
    assert "139.8 GiB · 132 SMs · sm 9.0" in html and "79.6 GiB" in html
    assert f'href="{reverse("kernel_detail", args=[k.code])}">warp-shuffle</a>' in html
    assert '<td class="num">1.0</td>' in html  # gpu0's 10 jobs in 10 minutes
    assert "<h2>GPUs</h2>" in html


def test_the_worker_records_its_devices_facts_and_name_on_its_row():
    Worker.objects.create(name="host-cpu", device="cpu")
    facts = record_device_facts(worker_name="host-cpu", device="cpu")
    row = Worker.objects.get(name="host-cpu")
    assert row.device_facts == facts and facts["device"] == "cpu" and facts["caches"]
    assert row.device_name == facts["name"]
    assert rows()["host-cpu"]["device"]["cores"] == facts["cores"]


def test_a_device_whose_facts_could_not_be_read_says_why_on_the_page(client):
    client.force_login(d.user())
    gpu_worker("host-cuda-gpu0", {"device": "cuda", "error": "CUDA is not available here"})
    html = client.get(reverse("worker_list")).content.decode()
    assert "CUDA is not available here" in html


def test_two_live_workers_on_one_gpu_are_warned_about(client):
    client.force_login(d.user())
    gpu_worker("host-cuda-gpu0", H200_FACTS)
    gpu_worker("host-cuda-extra", H200_FACTS)  # the same UUID: started by hand without CUDA_VISIBLE_DEVICES
    gpu_worker("other-cuda-gpu0", H100_FACTS)
    [shared] = selectors.worker_overview()["shared_gpus"]
    assert shared["workers"] == ["host-cuda-extra", "host-cuda-gpu0"] and shared["uuid"] == H200_FACTS["uuid"]
    html = client.get(reverse("worker_list")).content.decode()
    assert "is served by 2 workers: host-cuda-extra, host-cuda-gpu0" in html
    Worker.objects.filter(name="host-cuda-extra").update(heartbeat_at=ago(hours=2))  # gone: no longer shares
    assert selectors.worker_overview()["shared_gpus"] == []
