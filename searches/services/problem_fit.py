"""Refuse at submit a problem no worker here can hold: the runner's memory per evaluation
against the largest serving worker's memory for the problem's device.

One evaluation holds at least the inputs, a fresh copy of them per checked call
(runner/common/verify.py `copies`) and the float64 truths' upcast inputs (twice a float32's bytes,
runner/inside/truths.py): four times one input set. Outputs and parameters come on top and are unknown
before validation, so this is a lower bound and a refusal is certain. A size the source does not
tell (problem_memory.input_bytes is None) is accepted, and the page says so.
"""

from django.core.exceptions import ValidationError
from django.utils import timezone

from evaluation.models import Worker
from evaluation.selectors import WORKER_SEEN_WITHIN
from runner import Limits
from searches.models import Device
from searches.problem_memory import input_bytes

RUNNER_COPIES = 4  # inputs, a fresh copy, float64 truths' inputs (2x)


def largest_worker_bytes(device: str) -> int | None:
    """GPU: the largest device memory among the workers seen lately (None when none was); CPU: the
    memory one sandbox may take (KERNELLAB_SANDBOX_MEMORY_MB, as runner/host/limits.py reads it)."""
    if device == Device.CPU:
        return Limits.from_env(device).memory_mb * 1024 * 1024
    facts = Worker.objects.filter(device=device, heartbeat_at__gte=timezone.now() - WORKER_SEEN_WITHIN
                                  ).values_list("device_facts", flat=True)
    sizes = [f.get("memory_bytes") for f in facts if isinstance(f, dict) and f.get("memory_bytes")]
    return max(sizes, default=None)


def check_fits_workers(source: str, device: str) -> None:
    """ValidationError naming both numbers when one evaluation cannot fit the largest worker."""
    inputs = input_bytes(source)
    capacity = largest_worker_bytes(device)
    if inputs is None or capacity is None or inputs * RUNNER_COPIES <= capacity:
        return
    raise ValidationError(
        f"Too large for the workers here: its inputs take {_gb(inputs)}, and one evaluation holds at least "
        f"{_gb(inputs * RUNNER_COPIES)} (the inputs, a fresh copy per call and float64 truths), more than the "
        f"{_gb(capacity)} the largest {device} worker has. The problem itself may be fine: shrink its sizes, "
        "or run it where a larger worker serves.", code="too_large")


def _gb(size: int) -> str:
    return f"{size / 1e9:,.1f} GB"
