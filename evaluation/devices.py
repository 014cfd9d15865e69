"""The facts of the device a worker serves, on its Worker row (runner.host.devicefacts reads them; GPU
facts in a child process, so this process never initialises CUDA). Read once per worker start:
they change only when the hardware does, and a restart reads them again."""

import logging

from django.db import OperationalError

from runner import devicefacts

from .models import Worker

log = logging.getLogger(__name__)


def record_device_facts(*, worker_name: str, device: str) -> dict:
    """Read the facts and store them on the worker's row (with the device's name, so the Workers
    page names the GPU before the first job ends). Returns them; an unreadable device is stored
    with its "error" and logged, never raised: the worker serves jobs either way."""
    facts = devicefacts.read(device)
    if facts.get("error"):
        log.warning("%s: %s", worker_name, facts["error"])
    updates = {"device_facts": facts}
    if facts.get("name"):
        updates["device_name"] = facts["name"]
    try:
        Worker.objects.filter(name=worker_name).update(**updates)
    except OperationalError as exc:  # the database must not keep the worker from serving; a restart records them
        log.warning("%s: device facts not recorded (database error: %s)", worker_name, exc)
    return facts
