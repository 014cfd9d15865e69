"""Agent mode's toolbox: a model's `compile`, `check` or `profile` of a draft becomes a tool run, an
EvaluationJob the evaluation workers run in the runner's sandbox like any candidate (untrusted code
never runs in this process), waited for here on the kernel call's own thread.

Each run counts against the search's candidates budget (searches/engine/loop.budget_reached); a
run that would pass it is refused and the model told to submit. A paused or cancelled search ends
the wait (the call is abandoned, as calls in flight are). The answer is advice for the draft: the
kernel the model submits is judged afresh, never from a tool run.
"""

import re
import time

from django.conf import settings

from evaluation import queue
from evaluation.models import EvaluationJob
from proposers import prompts
from proposers.base import ABANDONED, ProposerError, Toolbox, ToolRun
from searches.models import Kernel, Search

from . import records

POLL_S = 0.25
_KERNEL_ID = re.compile(r"\s*#?(\d+)\s*")


class RunnerTools(Toolbox):
    def __init__(self, search: Search):
        self.search_id = search.id
        self.cap = search.agent_tool_calls

    def run(self, tool: str, arguments: dict) -> ToolRun:
        search = Search.objects.get(pk=self.search_id)
        source = self._source(search, tool, arguments)
        if not source:
            return ToolRun(f"`{tool}` needs a complete module defining class ModelNew"
                           + (" (or #N: a kernel of this search)" if tool == "profile" else ""), is_error=True)
        if search.max_candidates is not None and records.candidates_spent(search) + 2 > search.max_candidates:
            # the run and the kernel still to be submitted must both fit
            return ToolRun("not run: the search's candidates budget has no room for another run; submit your kernel",
                           is_error=True)
        job = queue.enqueue_tool(search, tool=tool, source=source)
        return self._wait(job, tool)

    def _source(self, search: Search, tool: str, arguments: dict) -> str:
        given = arguments.get("kernel" if tool == "profile" else "source")
        if not isinstance(given, str):
            return ""
        named = _KERNEL_ID.fullmatch(given) if tool == "profile" else None
        if named:
            kernels = Kernel.objects.filter(search=search, pk=int(named.group(1)))
            return kernels.values_list("source", flat=True).first() or ""
        return given if "class ModelNew" in given else ""

    def _wait(self, job: EvaluationJob, tool: str) -> ToolRun:
        """The run's answer once a worker recorded it; a search that stopped running ends the wait."""
        deadline = time.monotonic() + wait_limit_s()
        while True:
            job.refresh_from_db(fields=["status", "result", "last_error"])
            if job.status == EvaluationJob.Status.DONE:
                return ToolRun(prompts.tool_result_text(tool, job.result or {}))
            if job.status == EvaluationJob.Status.FAILED:
                return ToolRun(f"the evaluator could not run it (not a verdict on the draft): {job.last_error}",
                               is_error=True)
            status = Search.objects.filter(pk=self.search_id).values_list("status", flat=True).first()
            if status != Search.Status.RUNNING:
                _withdraw(job, "its search stopped")
                raise ProposerError(ABANDONED)
            if time.monotonic() > deadline:
                _withdraw(job, f"no evaluator answered within {wait_limit_s():.0f} s")
                return ToolRun(f"not run: no evaluator answered within {wait_limit_s():.0f} s; submit your kernel",
                               is_error=True)
            time.sleep(POLL_S)


def wait_limit_s() -> float:
    """How long a tool call waits for its run: the queue ahead of it, then the runner's own limit."""
    return settings.RUNNER_TIMEOUT * 2 + 60


def _withdraw(job: EvaluationJob, why: str) -> None:
    """A run nobody waits for any more is not started (one already running finishes, unread)."""
    EvaluationJob.objects.filter(pk=job.pk, status=EvaluationJob.Status.QUEUED).update(
        status=EvaluationJob.Status.FAILED, last_error=f"withdrawn: {why}")
