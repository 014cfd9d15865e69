"""KernelLab's data: problems, searches and their tree of ideas and kernels, runs, links (the event logs
are `live`'s). Anything shown outside the database (URLs, share links) uses the UUID `code`, never the
primary key."""

from .infra import BenchmarkRun, EvaluationJob, Worker
from .kernels import Kernel, ShareLink, Verdict, ranked_q
from .problems import Device, Problem, Suite, SuiteProblem
from .searches import ApiKeyState, Idea, ProposerCall, Search

__all__ = [
    "ApiKeyState", "BenchmarkRun", "Device", "EvaluationJob", "Idea", "Kernel", "Problem",
    "ProposerCall", "Search", "ShareLink", "Suite", "SuiteProblem", "Verdict", "Worker", "ranked_q",
]
