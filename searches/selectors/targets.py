"""Reads: what the proposer is told about the device a search runs on."""

from django.db.models import F

from evaluation.models import Worker
from runner import ceilings


def target_facts(*, device: str) -> dict:
    """The facts the most recently active worker of `device` recorded about the device it serves
    (Worker.device_facts), with the measured ceilings of runner/common/ceilings.py where the worker
    recorded none. {} when no worker of that device has reported yet."""
    worker = (Worker.objects.filter(device=device).exclude(device_facts={})
              .order_by(F("heartbeat_at").desc(nulls_last=True), "-started_at", "-id").first())
    facts = dict(worker.device_facts) if worker and isinstance(worker.device_facts, dict) else {}
    known = ceilings.measured(facts.get("name") or (worker.device_name if worker else "")) if device == "cuda" else None
    if known is not None:
        facts.setdefault("bandwidth_gbs", known.bandwidth / 1e9)
        facts.setdefault("tflops", {name: rate / 1e12 for name, rate in known.rates.items()})
    return facts
