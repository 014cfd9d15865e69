"""A kernel's figures mirror its primary run's (Kernel.RUN_FIGURES): one method copies them, and a verdict
recorded leaves every mirrored column equal to its run's. The tests read the list, so a column added to it
is checked with no other edit."""

import pytest
from django.db import models

from evaluation import queue
from searches import services
from searches.models import BenchmarkRun, Kernel
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def a_value(name: str, n: int):
    """A value of the column's type that neither model's default and no other column of the list holds."""
    field = BenchmarkRun._meta.get_field(name)
    if field.choices:
        defaults = {field.get_default(), Kernel._meta.get_field(name).get_default()}
        values = [value for value, _ in field.choices if value not in defaults]
        return values[n % len(values)]
    if isinstance(field, models.BooleanField):
        return not field.get_default()
    if isinstance(field, models.FloatField):
        return 1.25 + n
    if isinstance(field, models.CharField | models.TextField):
        return f"figure {n}"
    raise AssertionError(f"a mirrored column of a type the test cannot fill yet: {field.name}")


def test_every_mirrored_column_is_a_column_of_both_of_one_type():
    assert set(Kernel.TIMING_FIGURES) <= set(Kernel.RUN_FIGURES)
    for name in Kernel.RUN_FIGURES:
        ours, theirs = Kernel._meta.get_field(name), BenchmarkRun._meta.get_field(name)
        assert (type(ours), ours.null) == (type(theirs), theirs.null), name


def test_take_figures_copies_every_mirrored_column_and_names_them():
    run = BenchmarkRun(**{name: a_value(name, n) for n, name in enumerate(Kernel.RUN_FIGURES)})
    kernel = Kernel()
    assert kernel.take_figures(run) == list(Kernel.RUN_FIGURES)
    for name in Kernel.RUN_FIGURES:
        assert getattr(kernel, name) == getattr(run, name) != Kernel._meta.get_field(name).get_default(), name


def test_only_the_named_figures_are_taken():
    run = BenchmarkRun(**{name: a_value(name, n) for n, name in enumerate(Kernel.RUN_FIGURES)})
    kernel = Kernel()
    kernel.take_figures(run, Kernel.TIMING_FIGURES)
    for name in Kernel.RUN_FIGURES:
        expected = getattr(run, name) if name in Kernel.TIMING_FIGURES else Kernel._meta.get_field(name).get_default()
        assert getattr(kernel, name) == expected, name


def test_a_recorded_verdict_leaves_the_kernel_with_its_runs_figures():
    kernel = d.kernel(problem=d.problem(), status="pending", run=False)
    result = {"status": "correct", "reason": "slow to build", "quarantined": True,
              "quarantine_reason": "faster than the bandwidth allows", "seed": 7, "precision": "bf16",
              "compile": {"seconds": 0.2, "log": ""}, "timing": {"median_ms": 0.25}, "speedup_vs_eager": 4.0,
              "speedup_vs_compile": 3.0, "environment": {"device_name": "NVIDIA H200"}}
    run = services.kernel_record_verdict(kernel=kernel, job=queue.enqueue_kernel(kernel), result=result)
    kernel.refresh_from_db()
    run.refresh_from_db()
    for name in Kernel.RUN_FIGURES:
        assert getattr(kernel, name) == getattr(run, name) != Kernel._meta.get_field(name).get_default(), name
