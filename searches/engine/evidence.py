"""Counters before a round's ideas. On a GPU, each of the round's parents whose profile its ideas
call reads (context.is_profiled: its round's `profiled_kernels` fastest) is rerun once with Nsight
Compute's counters (runner/inside/ncuprofile.py, where the host lets the sandbox read them), and
that parent's ideas call waits for the rerun: the model sees stall reasons and pipe use, not only
the build's registers and the achieved bandwidth. The starting kernel's evaluation reads them with
its verdict (round 1's only parent; engine/calls.py), and the others are asked for early: while a
round waits for its last verdicts, the kernels that would be its parents if it ended then get their
rerun (engine/loop.py), so the next round's calls seldom wait; a kernel overtaken meanwhile costs one
rerun, on an evaluator idle at the round's end. A rerun that fails lets the call go without them
(its kick wakes the search). On the CPU there are no counters to read, and the built-in playbook
reads no profile, so nothing waits there."""

from evaluation.models import EvaluationJob
from searches.models import Device, Kernel, Search
from searches.services import kernels as kernel_services

from . import context


def applies(search: Search) -> bool:
    """A GPU search whose proposer reads the profile."""
    return search.device == Device.CUDA and search.capabilities.llm


def request(search: Search, parent_ids: list[int]) -> None:
    """Queue the counter reruns of the (new or likely next) round's profiled parents that have none yet."""
    if not applies(search):
        return
    for kernel in Kernel.objects.filter(pk__in=parent_ids).select_related("search"):
        counted = EvaluationJob.objects.filter(kernel=kernel, options__counters=True).exists()
        if not counted and context.is_profiled(kernel):
            kernel_services.kernel_request_rerun(kernel=kernel, user=None, counters=True)


def waiting(search: Search, parent_ids: list[int]) -> set[int]:
    """The parents whose counter rerun is queued or running."""
    if not applies(search):
        return set()  # no query on the steps of searches that never wait
    return set(EvaluationJob.objects.filter(kernel_id__in=parent_ids, purpose=EvaluationJob.Purpose.RERUN,
                                            options__counters=True, status__in=EvaluationJob.UNFINISHED)
               .values_list("kernel_id", flat=True))
