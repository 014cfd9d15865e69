"""Finding a run from the command line: by its code, or by its name (unique per suite)."""

import uuid

from django.core.management.base import CommandError

from .models import Run


def run_named(text: str, suite: str = "") -> Run:
    try:
        found = Run.objects.filter(code=uuid.UUID(text))
    except ValueError:
        found = Run.objects.filter(name=text)
    if suite:
        found = found.filter(suite__name=suite)
    runs = list(found.select_related("suite")[:2])
    if not runs:
        raise CommandError(f"no run named {text!r}" + (f" on the suite {suite!r}" if suite else ""))
    if len(runs) > 1:
        raise CommandError(f"several runs are named {text!r}: add --suite, or give the run's code")
    return runs[0]
