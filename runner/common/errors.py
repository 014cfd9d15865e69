class RunnerError(Exception):
    """No verdict could be produced (bad arguments, an invalid problem, a sick GPU)."""


class ProblemInvalid(RunnerError):
    """The problem failed validation, so no kernel can be judged against it."""


class DeviceBusy(RunnerError):
    """The worker's device could not run the job for a reason outside the job (its memory held
    by other work): an infrastructure failure of the worker, never a verdict on the job."""


class Cancelled(RunnerError):
    """The run was stopped from outside before it gave a verdict (Pool.scope: its job went to
    another evaluator); whatever it measured is dropped."""
