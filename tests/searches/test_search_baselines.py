"""A search's extra baselines (searches/config.py `baselines`) travel with every evaluation of its
candidates, as a re-judged run's do: the engine's own, a person's kernel added to it, a verified
rerun and a candidate queued again on resume; a search without them asks the runner for none."""

import pytest

from searches import services
from searches.engine import loop
from evaluation.models import EvaluationJob
from searches.models import Kernel, Verdict

from .test_engine import evaluate_all, kicks, problem, start  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

ASKED = {"allow_library": False, "baselines": ["max-autotune", "cudagraph"]}
SOURCE = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.softmax(1)\n"


def options_of(search) -> list[dict]:
    return [job.options for job in EvaluationJob.objects.filter(kernel__search=search).order_by("id")]


def test_every_job_of_a_search_asks_the_runner_for_its_baselines(problem):  # noqa: F811
    search = start(problem, rounds=1, kernels_per_idea=1, baselines=["cudagraph", "max-autotune"])
    loop.advance(search.id)  # the starting kernel, from the engine's records
    assert options_of(search) == [ASKED]
    evaluate_all(search, median_for=lambda k: 3.0)
    loop.advance(search.id)  # round 1's candidate
    assert options_of(search)[1:] == [ASKED]
    evaluate_all(search, median_for=lambda k: 2.0)
    loop.advance(search.id)  # done: the fastest are rerun with a fresh seed, judged as first judged
    reruns = EvaluationJob.objects.filter(kernel__search=search, purpose=EvaluationJob.Purpose.RERUN)
    assert reruns.exists() and {tuple(sorted(j.options["baselines"])) for j in reruns} == {("cudagraph", "max-autotune")}

    mine = services.kernel_submit(user=None, problem=problem, source=SOURCE, search=search)
    assert mine.jobs.get().options == ASKED


def test_a_candidate_queued_again_on_resume_keeps_them_and_a_plain_search_asks_for_none(problem):  # noqa: F811
    search = start(problem, baselines=["max-autotune"])
    loop.advance(search.id)
    services.search_pause(search=search, user=None)
    Kernel.objects.filter(search=search).update(status=Verdict.FAILED)
    services.search_resume(search=search, user=None)
    assert options_of(search)[-1] == {"allow_library": False, "baselines": ["max-autotune"]}

    plain = start(problem)
    loop.advance(plain.id)
    assert options_of(plain) == [{"allow_library": False}]
