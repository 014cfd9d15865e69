"""The kernel page's profile: the newest run's figures as a table with the bottleneck, and the
"profile" button that queues a run to measure it."""

import pytest
from django.urls import reverse

from evaluation.models import EvaluationJob
from runner.common import counters, roofline
from tests.runner.test_counters import NCU_OUTPUT
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

H200 = {"name": "NVIDIA H200", "sm_count": 132, "warp_size": 32, "max_threads_per_sm": 2048,
        "registers_per_sm": 65536, "shared_mem_per_sm": 233472}


@pytest.fixture
def alice(client):
    user = d.user()
    client.force_login(user)
    return user


@pytest.fixture
def kernel(alice):
    problem = d.problem()
    return d.kernel(problem=problem, search=d.search(problem=problem, created_by=alice), median_ms=0.5)


def test_a_kernel_without_a_profile_offers_the_button_which_queues_a_run(client, kernel):
    page = client.get(reverse("kernel_detail", args=[kernel.code])).content.decode()
    assert 'id="btn-profile"' in page and "No profile yet" in page
    response = client.post(reverse("kernel_profile", args=[kernel.code]), follow=True)
    [job] = EvaluationJob.objects.filter(kernel=kernel, purpose="rerun")
    assert job.options.get("counters") is True  # on a GPU its run reads Nsight Compute's counters too
    assert "Profile queued" in response.content.decode()


def test_a_profile_asked_for_while_a_rerun_waits_adds_the_counters_to_it(client, kernel):
    client.post(reverse("kernel_rerun", args=[kernel.code]))
    [job] = EvaluationJob.objects.filter(kernel=kernel, purpose="rerun")
    assert "counters" not in job.options
    client.post(reverse("kernel_profile", args=[kernel.code]))
    [job] = EvaluationJob.objects.filter(kernel=kernel, purpose="rerun")
    assert job.options["counters"] is True


def test_the_newest_runs_profile_is_shown_with_its_bottleneck(client, kernel):
    run = kernel.runs.get()
    run.result["profile"] = roofline.profile(
        device="cuda", device_facts=H200, median_ms=0.5, flops=None, min_bytes=1.8e9, precision="fp32",
        kernels=[{"name": "softmax_rows", "registers": 128, "shared_bytes": 256, "local_bytes": 16,
                  "block": [256, 1, 1], "grid": [4096, 1, 1], "launches": 1, "time_share": 1.0}])
    run.save()
    page = client.get(reverse("kernel_detail", args=[kernel.code])).content.decode()
    assert "<strong>memory-bound</strong>: it moves the problem&#x27;s bytes at 85% of the measured bandwidth." in page
    assert "<code>softmax_rows</code>" in page and "256×1×1" in page and "4096×1×1" in page
    assert "25% <span class=\"muted\">(registers)</span>" in page
    assert roofline.COUNTERS_UNAVAILABLE in page and "Profile again" in page


def test_a_counter_profile_is_shown_beside_the_build_figures(client, kernel):
    run = kernel.runs.get()
    read = counters.read_profile(0, NCU_OUTPUT)
    run.result["profile"] = {**roofline.profile(device="cuda", device_facts=H200, median_ms=0.5, flops=None,
                                                min_bytes=1.8e9, precision="fp32", kernels=None,
                                                counters=counters.profile_text(read)),
                             "counter_kernels": read["kernels"]}
    run.save()
    page = client.get(reverse("kernel_detail", args=[kernel.code])).content.decode()
    assert "Nsight Compute, one call" in page and "DRAM 88% of peak" in page
