class RunnerError(Exception):
    """No verdict could be produced (bad arguments, an invalid problem, a sick GPU)."""


class ProblemInvalid(RunnerError):
    """The problem failed validation, so no kernel can be judged against it."""
