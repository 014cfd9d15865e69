"""Leaderboards never mix GPU models: kernels of one problem judged by an H100 worker and by an
H200 worker (through the real verdict service) land on two boards, each with its own PyTorch
reference times and its own ceilings, and a board asked for by name holds only its model."""

import pytest
from django.urls import reverse

from evaluation import queue
from searches import selectors, services
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def judged(problem, *, name, device_name, median_ms, eager_ms):
    kernel = d.kernel(problem=problem, status="pending", run=False, name=name)
    job = queue.enqueue_kernel(kernel)
    result = {"status": "correct", "reason": "", "quarantined": False, "seed": 7, "precision": "fp32",
              "compile": {"seconds": 0.2, "log": ""}, "timing": {"median_ms": median_ms},
              "baseline": {"eager_ms": eager_ms, "compile_ms": None, "compile_mode": None},
              "speedup_vs_eager": eager_ms / median_ms, "environment": {"device_name": device_name}}
    services.kernel_record_verdict(kernel=kernel, job=job, result=result)
    return kernel


@pytest.fixture
def two_models():
    problem = d.problem(name="Softmax", flops=0, min_bytes=8 * 1024 ** 3)
    return problem, {
        "h100 fast": judged(problem, name="h100 fast", device_name=H100, median_ms=0.2, eager_ms=1.0),
        "h100 slow": judged(problem, name="h100 slow", device_name=H100, median_ms=0.9, eager_ms=1.0),
        "h200 only": judged(problem, name="h200 only", device_name=H200, median_ms=0.5, eager_ms=0.7),
    }


def test_kernels_timed_on_two_gpu_models_land_on_two_boards(two_models):
    problem, kernels = two_models
    boards = {board["device_name"]: board for board in selectors.leaderboard(problem=problem)}
    assert sorted(boards) == [H100, H200]
    assert [k.name for k in boards[H100]["ranked"]] == ["h100 fast", "h100 slow"]
    assert [k.name for k in boards[H200]["ranked"]] == ["h200 only"]  # ranked first there, not third overall
    assert [r["median_ms"] for r in boards[H100]["references"]] == [1.0]
    assert [r["median_ms"] for r in boards[H200]["references"]] == [0.7]
    # each board's speed of light is at its own GPU's bandwidth
    assert boards[H100]["ranked"][0].sol["device"] == "H100"
    assert boards[H200]["ranked"][0].sol["device"] == "H200"


def test_a_board_asked_for_by_model_and_its_export_hold_only_that_model(client, two_models):
    problem, _ = two_models
    [board] = selectors.leaderboard(problem=problem, device_name=H200)
    assert [k.name for k in board["ranked"]] == ["h200 only"]
    client.force_login(d.user())
    entries = client.get(reverse("leaderboard_json", args=[problem.code]), {"device": H100}).json()["entries"]
    assert [(e["name"], e["device_name"], e["rank"]) for e in entries] == [("h100 fast", H100, 1),
                                                                          ("h100 slow", H100, 2)]


def test_a_rerun_on_another_gpu_model_does_not_verify_a_kernel(two_models):
    problem, kernels = two_models
    kernel = kernels["h200 only"]
    job = services.kernel_request_rerun(kernel=kernel, user=None)
    services.kernel_record_verdict(kernel=kernel, job=job, result={
        "status": "correct", "seed": job.seed, "precision": "fp32", "timing": {"median_ms": 0.5},
        "environment": {"device_name": H100}})
    kernel.refresh_from_db()
    assert not kernel.verified and kernel.device_name == H200  # still on the H200 board, unverified
