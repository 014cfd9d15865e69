"""Sources judged once per search (searches/engine/dedup.py): a candidate whose source, comments and
layout aside, a kernel of the search already had judged takes that verdict and is never queued."""

import pytest

from evaluation.models import EvaluationJob
from proposers.base import KernelProposal
from searches.engine import dedup, loop, records
from searches.models import Kernel
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

SOURCE = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n"


def test_comments_blank_lines_and_spacing_do_not_change_the_hash_but_code_does():
    same = "# a comment\nimport torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):  # why\n" \
           "        return x.relu( )\n"
    assert dedup.source_hash(same) == dedup.source_hash(SOURCE)
    assert dedup.source_hash(SOURCE.replace("relu", "sigmoid")) != dedup.source_hash(SOURCE)
    assert dedup.source_hash("def broken(:\n  '''") != dedup.source_hash("def broken(:\n")  # untokenizable: text


def save(search, source, **where):
    return records.save_kernel(search, KernelProposal(source=source), call=None, origin=Kernel.Origin.LLM,
                               round=1, name="candidate", **where)


def test_a_source_judged_before_takes_its_verdict_and_is_not_queued():
    problem = d.problem()
    search = d.search(problem=problem)
    first = save(search, SOURCE)
    assert first.status == "pending" and first.duplicate_of is None and first.source_hash
    assert save(search, "# again\n" + SOURCE).duplicate_of is None  # its twin not judged yet: run it too
    Kernel.objects.filter(pk=first.pk).update(status="correct", median_ms=0.25, speedup_vs_eager=4.0,
                                              device_name="NVIDIA H200")
    jobs = EvaluationJob.objects.count()
    twin = save(search, SOURCE + "\n# the same, once more\n")
    assert twin.duplicate_of_id == first.id and EvaluationJob.objects.count() == jobs
    assert (twin.status, twin.median_ms, twin.speedup_vs_eager) == ("correct", 0.25, 4.0)
    other = d.search(problem=problem)
    assert save(other, SOURCE).duplicate_of is None  # another search judges its own


def test_a_duplicate_is_never_a_parent_beside_its_twin():
    problem = d.problem()
    search = d.search(problem=problem, parents_per_round=3, bank_size=0)
    first = save(search, SOURCE)
    Kernel.objects.filter(pk=first.pk).update(status="correct", median_ms=0.25)
    twin = save(search, SOURCE + "# same\n")
    assert loop.choose_parents(search) == [first.id] and twin.status == "correct"
