"""Where a run stands, as the parent reads it from messages it handles anyway: the job sent, the
device asked for and granted, the first timed call. Informational only: a candidate that sends
those messages early misleads a progress line and nothing else (no verdict reads a phase)."""

from __future__ import annotations

# per job kind: the message the parent saw -> the phase the run is in from then on
PHASES = {
    "evaluate": {"sent": "compiling", "device": "waiting_for_device", "go": "checking", "timing": "timing"},
    "validate": {"sent": "running_reference", "device": "waiting_for_device", "go": "timing", "timing": "timing"},
}
# after the candidate's sandbox: the trusted judge compares outputs (evaluation.py says it)
JUDGING = "judging"


class Reporter:
    """Calls `on_phase(name)` once per phase of a job of kind `job_kind`, in the order seen."""

    def __init__(self, job_kind: str | None, on_phase=None):
        self.steps = PHASES.get(job_kind or "", {}) if on_phase is not None else {}
        self.on_phase = on_phase
        self.said: set[str] = set()

    def __call__(self, step: str) -> None:
        name = self.steps.get(step)
        if name is not None and name not in self.said:
            self.said.add(name)
            self.on_phase(name)
