"""A verified rerun on the CPU compares the paired speedup with the first run's 95% interval: a
median can hold still while the speedup moves (the eager time beside it moved), and the other way."""

import pytest

from evaluation import leases
from searches import services
from searches.models import Kernel

from . import dashboard_data as d
from .problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db


def verdict(median_ms, speedup, interval, seed):
    return {
        "schema": 1, "status": "correct", "reason": "", "quarantined": False, "quarantine_reason": "", "seed": seed,
        "precision": "fp32", "compile": {"seconds": 0.1, "log": ""},
        "correctness": {"atol": 1e-4, "rtol": 1e-4, "passed": True, "per_distribution": []},
        "timing": {"median_ms": median_ms, "n": 10}, "paired": {"speedup": speedup, "speedup_ci95": interval},
        "baseline": {"eager_ms": 2.0, "compile_ms": None, "compile_mode": None},
        "speedup_vs_eager": speedup, "speedup_vs_compile": None,
        "environment": {"device_name": "test-cpu", "torch": "2.13", "runner_version": "t"},
    }


def rerun(kernel, median_ms, speedup) -> bool:
    job = services.kernel_request_rerun(kernel=kernel, user=None)
    services.kernel_record_verdict(kernel=kernel, job=leases.claim("w", "cpu"),
                                   result=verdict(median_ms, speedup, [speedup * 0.9, speedup * 1.1], job.seed))
    return Kernel.objects.get(pk=kernel.pk).verified


def test_the_paired_speedup_decides_not_the_median():
    problem = d.problem(name="Softmax", source=SOFTMAX, family="softmax", device="cpu")
    kernel = services.kernel_submit(user=None, problem=problem, source=SOFTMAX.replace("class Model(", "class ModelNew("))
    services.kernel_record_verdict(kernel=kernel, job=leases.claim("w", "cpu"), result=verdict(1.0, 2.0, [1.9, 2.1], 11))
    kernel.refresh_from_db()
    assert not rerun(kernel, 1.02, 6.0)  # the median held within 10%, the speedup moved 3x: not reproduced
    assert rerun(kernel, 1.5, 2.05)  # the median moved 50% with the eager time beside it: reproduced
