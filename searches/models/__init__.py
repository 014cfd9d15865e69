"""KernelLab's data: problems, searches and their tree of ideas and kernels, runs, links. Anything shown
outside the database (URLs, share links) uses the UUID `code`, never the primary key. Evaluation jobs and
workers are the `evaluation` app's (evaluation/models.py; `Device` is re-exported from there), the event
logs `live`'s."""

from .infra import BenchmarkRun
from .kernels import Kernel, ShareLink, Verdict, ranked_q
from .problems import Device, Problem, Suite, SuiteProblem
from .searches import ApiKeyState, Idea, ProposerCall, Search
from .tasks import TaskQueueHeartbeat

__all__ = [
    "ApiKeyState", "BenchmarkRun", "Device", "Idea", "Kernel", "Problem", "ProposerCall", "Search",
    "ShareLink", "Suite", "SuiteProblem", "TaskQueueHeartbeat", "Verdict", "ranked_q",
]
