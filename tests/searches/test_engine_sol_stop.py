"""The speed-of-light stop: a branch whose kernel reaches the search's `sol_stop_percent` of its
floor (runner.common.ceilings, on the GPU model that timed it) gets no more ideas, and a search whose
every branch is there ends saying so."""

import pytest

from evaluation import leases
from runner.common import ceilings
from searches import services
from searches.engine import kick, loop
from searches.models import Kernel
from tests.searches.test_engine import problem, runner_verdict  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db
H200 = "NVIDIA H200"


@pytest.fixture(autouse=True)
def quiet_kicks():
    kick.set_kicker(lambda search_id: None)
    yield
    kick.set_kicker(None)


@pytest.fixture
def floor_1ms(problem):  # noqa: F811
    """The problem moves exactly 1 ms of bytes at the H200's measured bandwidth."""
    gbs = ceilings.speed_of_light(device_name=H200, flops=0, min_bytes=10**9, precision="fp32", median_ms=1.0)
    problem.min_bytes = round(10**9 / gbs["fraction"])
    problem.flops = 1
    problem.save(update_fields=["min_bytes", "flops"])
    return problem


def judge(search, median_for):
    while (job := leases.claim("w", "cpu")) is not None:
        result = runner_verdict(median_ms=median_for(job.kernel), device_name=H200)
        services.kernel_record_verdict(kernel=job.kernel, job=job, result=result)


def start(problem, **knobs):
    return services.search_start(problem=problem, user=None, proposer="playbook", device="cpu", rounds=3,
                                 parents_per_round=1, ideas_per_parent=1, kernels_per_idea=2, bank_size=0, **knobs)


def test_a_branch_at_its_speed_of_light_gets_no_more_ideas(floor_1ms):
    search = start(floor_1ms, sol_stop_percent=90)
    loop.advance(search.id)
    judge(search, lambda k: 3.0)  # the seed: 33% of its floor
    loop.advance(search.id)
    # Round 1: variant 0 at 95% of its floor (its branch is done), variant 1 at 50%.
    judge(search, lambda k: 1.05 if k.variant == 0 else 2.0)
    loop.advance(search.id)
    search.refresh_from_db()
    at_floor, slower = (Kernel.objects.get(search=search, round=1, variant=v) for v in (0, 1))
    assert loop.at_speed_of_light(search) == {at_floor.id}
    assert search.current_round == 2 and search.round_parents["2"]["parents"] == [slower.id]


def test_a_search_whose_every_branch_is_at_its_speed_of_light_ends_saying_so(floor_1ms):
    search = start(floor_1ms, sol_stop_percent=90)
    loop.advance(search.id)
    judge(search, lambda k: 1.05)
    loop.advance(search.id)
    search.refresh_from_db()
    assert (search.status, search.stop_reason) == (
        "completed", "every branch reached 90% of its speed of light after round 0")


def test_without_the_stop_the_same_kernel_is_built_on(floor_1ms):
    search = start(floor_1ms)
    loop.advance(search.id)
    judge(search, lambda k: 1.05)
    loop.advance(search.id)
    search.refresh_from_db()
    assert search.status == "running" and search.current_round == 1
