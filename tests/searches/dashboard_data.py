"""Rows for the dashboard's tests, made straight through the models (the engine's services
are tested on their own); events go through the real events.publish."""

import itertools

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from searches.services import events
from searches.models import BenchmarkRun, Idea, Kernel, Problem, ProposerCall, Search

PROBLEM_SOURCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024)]


def get_init_inputs():
    return []
'''

KERNEL_SOURCE = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)  # {tag}
'''

ENV = {"device_name": "NVIDIA H200", "torch": "2.11.0+cu130", "cuda": "13.0", "driver": "580.65",
       "python": "3.12.3", "runner_version": "1"}
_counter = itertools.count(1)


def user(name="alice", **extra):
    return get_user_model().objects.create_user(username=name, password="pw-for-tests-only", **extra)


def problem(*, name="ReLU", source=PROBLEM_SOURCE, description="", outputs=((1024,), "float32"), **extra):
    shape, dtype = outputs
    return Problem.objects.create(
        name=name, source=source, description=description, validation_status="ok",
        validation={"outputs": [{"shape": list(shape), "dtype": dtype}],
                    "baseline": {"eager_ms": 1.0, "compile_ms": 0.8, "compile_mode": "default"}, "environment": ENV},
        **extra)


def search(*, problem, created_by=None, **extra):
    extra.setdefault("status", Search.Status.RUNNING)
    extra.setdefault("started_at", timezone.now())
    return Search.objects.create(problem=problem, created_by=created_by, **extra)


def idea(*, search, parent_kernel=None, title="Tile it", description="", round=1, publish=False):
    with transaction.atomic():
        made = Idea.objects.create(search=search, parent_kernel=parent_kernel, title=title, description=description,
                                   round=round)
        if publish:
            events.publish(search.id, "idea.created", events.idea_payload(made))
    return made


def kernel(*, problem, search=None, idea=None, parent=None, round=1, status="correct", median_ms=0.5,
           quarantined=False, verified=False, source=None, name="", device_name="NVIDIA H200", publish=False,
           run=True, **extra):
    n = next(_counter)
    extra.setdefault("precision", "fp32" if status == "correct" else "")
    with transaction.atomic():
        made = Kernel.objects.create(
            problem=problem, search=search, idea=idea, parent=parent, round=round, name=name,
            source=source if source is not None else KERNEL_SOURCE.format(tag=n), status=status,
            quarantined=quarantined, verified=verified, device_name=device_name if status == "correct" else "",
            median_ms=median_ms if status == "correct" else None,
            speedup_vs_eager=(1.0 / median_ms) if status == "correct" and median_ms else None,
            speedup_vs_compile=(0.8 / median_ms) if status == "correct" and median_ms else None,
            evaluated_at=timezone.now(), **extra)
        if run and status not in ("pending", "evaluating"):
            timing = None
            if status == "correct":
                samples = [median_ms * (1 + 0.01 * ((i % 7) - 3)) for i in range(50)]
                timing = {"median_ms": median_ms, "mean_ms": median_ms, "std_ms": 0.01 * median_ms,
                          "min_ms": min(samples), "max_ms": max(samples), "n": 50,
                          "ci95_ms": [median_ms * 0.99, median_ms * 1.01], "outliers": 0, "samples_ms": samples}
            BenchmarkRun.objects.create(
                kernel=made, purpose="search", status=status, seed=1234 + n, precision=made.precision,
                compile_seconds=0.2, compile_log="cc -O3 ok", median_ms=made.median_ms, timing=timing,
                correctness={"atol": 1e-4, "rtol": 1e-4, "passed": status == "correct", "per_distribution": [
                    {"name": "randn", "trials": 3, "err": 0.1, "ref_fp32_err": 0.05, "max_abs_err": 1e-6,
                     "skipped": False, "passed": status == "correct"}]},
                baseline={"eager_ms": 1.0, "compile_ms": 0.8, "compile_mode": "default"}, environment=ENV,
                device_name=made.device_name, speedup_vs_eager=made.speedup_vs_eager,
                speedup_vs_compile=made.speedup_vs_compile, result={"status": status})
        if publish and search is not None:
            events.publish_kernel(made, "kernel.created")
    return made


def call(*, search, prompt="Make it faster", reply="Here is a kernel"):
    return ProposerCall.objects.create(search=search, purpose="kernel", proposer="playbook", prompt=prompt, reply=reply)
