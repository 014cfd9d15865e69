"""Where the evaluation worker hands what it learns: a job's run began, its phase, its verdict, its failure
for good, and the periodic nudge for stalled work. The app that queues the jobs (`searches`) registers
one sink at start-up (`SearchesConfig.ready`); evaluation never imports it, so the dependency points
one way: searches → evaluation.

No sink registered is a setup error, never a silent drop: `current()` raises NoSink, the worker
checks for it before it claims anything, and a job already claimed goes back to the queue unspent."""

from typing import Protocol

from .models import EvaluationJob


class Sink(Protocol):
    def job_started(self, job: EvaluationJob) -> None:
        """Just before the sandbox gets the job (a kernel shows as being evaluated)."""

    def job_phase(self, *, job_id: int, worker: str, phase: str, started_at, seconds: dict) -> bool:
        """Where a running job stands (runner/host/phases.py); False when `worker` no longer holds it."""

    def verdict(self, job: EvaluationJob, result: dict) -> None:
        """The runner's answer for the job, inside the transaction that checked the worker still holds it."""

    def job_failed(self, job: EvaluationJob, reason: str, reason_code: str = "") -> None:
        """The job failed for good (its row already says so): tell its problem or kernel. In a transaction."""

    def stalled(self) -> int:
        """A periodic nudge from every evaluator: re-start work whose driver went quiet. How many were."""


class NoSink(RuntimeError):
    """No app registered where evaluation results go."""


_sink: Sink | None = None


def register(sink: Sink | None) -> Sink | None:
    """Set the sink (None clears it); returns the one it replaces."""
    global _sink
    previous, _sink = _sink, sink
    return previous


def current() -> Sink:
    if _sink is None:
        raise NoSink("no evaluation sink is registered: the app that queues evaluation jobs registers one at "
                     "start-up (searches: SearchesConfig.ready); is it in INSTALLED_APPS and Django set up?")
    return _sink
