"""The idea bank through the real engine, the real `anthropic` SDK and the local fake Messages API:
what one search learned reaches the ideas request of the next on a similar problem (as the fake
server received it), never an unrelated one's, never another person's from a private search; a
repeated idea (same title, same technique) is asked again once."""

import pytest
from django.contrib.auth import get_user_model

from evaluation import leases
from proposers import playbook
from searches import catalog, services
from searches.engine import loop
from searches.models import Idea, Kernel, Search
from tests.fakes.anthropic_server import FakeAnthropic, asked_counts, kernel_call, task_of

from .test_engine import problem, runner_verdict  # noqa: F401  (fixture)
from .test_engine_llm import kernel_source, kicks  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads


class Tagged:
    """Ideas tagged with a technique and a prediction (titles from `titles`, in turn); kernels tagged apart."""

    def __init__(self, titles=(("Warp shuffle rows", "warp-reductions"),)):
        self.titles = list(titles)
        self.kernels = 0

    def __call__(self, seen):
        if task_of(seen) == "ideas":
            count, briefs = asked_counts(seen)
            title, technique = self.titles.pop(0) if len(self.titles) > 1 else self.titles[0]
            return {"ideas": [{"title": title if i == 0 else f"{title} {i + 1}", "description": "Shuffles.",
                               "briefs": ["one warp per row"] * briefs, "technique": technique,
                               "expected_speedup": 1.5} for i in range(count)]}
        self.kernels += 1
        return kernel_call(kernel_source(f"k{self.kernels}"))


@pytest.fixture
def fake(settings, monkeypatch):
    with FakeAnthropic(responder=Tagged()) as server:
        settings.ANTHROPIC_BASE_URL = server.url
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-bank-test")
        yield server


def validated(name: str, family: str, min_bytes: float = 1.0):
    created = services.problem_create(user=None, name=name, device="cpu", family=family,
                                      source=catalog.get("softmax-cpu").source + f"\n# {name}\n")
    services.problem_record_validation(problem=created, job=created.jobs.get(), result={
        "schema": 1, "status": "ok", "reason": "", "outputs": [{"shape": [8], "dtype": "float32"}],
        "family": family, "flops": 1.0, "min_bytes": min_bytes,
        "baseline": {"eager_ms": 2.0, "compile_ms": 1.5, "compile_mode": "default"}, "environment": {}})
    created.refresh_from_db()
    return created


def judge(reproduce: bool = True):
    """Every queued job judged: the starting kernel at 2 ms, the others at 1 ms; the verified rerun a completed
    search asks of its best kernels with a new seed (it reproduces) or the same one (it does not count)."""
    while (job := leases.claim("test-worker", "cpu")) is not None:
        verdict = runner_verdict("correct", 2.0 if job.kernel.origin == "seed" else 1.0,
                                 seed=12 if job.purpose == "rerun" and reproduce else 11)
        services.kernel_record_verdict(kernel=job.kernel, job=job, result=verdict)


def run_search(problem, user=None, reproduce=True, **knobs):
    """One round: a starting kernel at 2 ms, then each idea's kernel at 1 ms (2x over its parent)."""
    options = dict(proposer="anthropic", device="cpu", rounds=1, parents_per_round=1, ideas_per_parent=1,
                   kernels_per_idea=1, bank_size=0, repair_attempts=0, model="claude-sonnet-4-6")
    options.update(knobs)
    search = services.search_start(problem=problem, user=user, **options)
    for _ in range(12):
        loop.advance(search.id)
        judge(reproduce)
        search.refresh_from_db()
        if search.status in Search.FINISHED:
            break
    return search


def ideas_requests(fake, since: int = 0):
    return [s.user_text for s in fake.requests[since:] if task_of(s) == "ideas"]


def test_a_successful_idea_reaches_a_similar_problem_with_its_numbers_and_not_an_unrelated_one(problem, fake):
    first = run_search(problem)
    assert first.status == "completed"
    idea = Idea.objects.get(search=first)
    assert (idea.technique, idea.expected_speedup) == ("warp-reductions", 1.5)

    seen = len(fake.requests)
    run_search(validated("Softmax, wider rows", "softmax"))
    [request] = ideas_requests(fake, seen)
    assert "What worked and what failed on similar problems on this GPU" in request
    assert "softmax, small inputs, cpu, C through the system compiler" in request
    assert ("- warp-reductions (rated 0.67): 1 idea(s), 1 faster than their parent (100%), median gain 2.00x, "
            "best 2.00x" in request)
    assert "- not tried on similar problems yet: tiling (rated 0.50), vectorised-loads (rated 0.50)," in request
    assert "library (rated" not in request  # the search forbids library calls
    assert "warp-reductions worked: Warp shuffle rows (2.00x)" in request  # fenced: another search's words
    assert ("Your predictions there (claude-sonnet-4-6, 1 idea(s) with a trusted kernel): median 1.50x expected, "
            "2.00x measured (measured / expected 1.33).") in request

    seen = len(fake.requests)
    run_search(validated("Matmul", "matmul"))
    [unrelated] = ideas_requests(fake, seen)
    assert "What worked" not in unrelated and "Warp shuffle rows" not in unrelated
    seen = len(fake.requests)
    run_search(validated("Softmax, huge", "softmax", min_bytes=1e9))  # another size class
    assert "What worked" not in ideas_requests(fake, seen)[0]


def test_a_private_search_teaches_its_owner_and_no_one_else(problem, fake):
    users = get_user_model().objects
    alice, bob = users.create_user("alice", password="x"), users.create_user("bob", password="x")
    run_search(problem, user=alice, private=True)
    similar = validated("Softmax, again", "softmax")

    fake.responder = Tagged([("Blocked rows", "tiling")])  # public searches, teaching all
    seen = len(fake.requests)
    run_search(similar, user=bob)
    assert "Warp shuffle rows" not in ideas_requests(fake, seen)[0]
    seen = len(fake.requests)
    run_search(similar)  # the headless command's search sees what everyone sees
    assert "Warp shuffle rows" not in ideas_requests(fake, seen)[0]
    seen = len(fake.requests)
    run_search(similar, user=alice)
    assert "warp-reductions worked: Warp shuffle rows (2.00x)" in ideas_requests(fake, seen)[0]


@pytest.mark.parametrize("untrusted", ["quarantined", "not reproduced"])
def test_an_untrusted_result_teaches_nothing(problem, fake, untrusted):
    first = run_search(problem, reproduce=untrusted != "not reproduced")
    idea_kernel = Idea.objects.get(search=first).kernels.get()
    assert idea_kernel.runs.filter(purpose="rerun").exists()
    if untrusted == "quarantined":
        idea_kernel.quarantined = True
        idea_kernel.save(update_fields=["quarantined"])
    seen = len(fake.requests)
    run_search(validated("Softmax, wider rows", "softmax"))
    request = ideas_requests(fake, seen)[0]
    assert "- warp-reductions (rated 0.08): 1 idea(s), 0 faster than their parent (0%)" in request
    assert "Warp shuffle rows" not in request


def test_priors_steer_which_ideas_are_kept_and_ask_for_more(problem, fake):
    run_search(problem)
    kernels = fake.responder
    fake.responder = Tagged([("Bigger blocks", "launch-config")])  # tried once, untrusted: rated lower
    tried = Idea.objects.get(search=run_search(validated("Softmax, narrow rows", "softmax"))).kernels.get()
    Kernel.objects.filter(pk=tried.pk).update(quarantined=True)

    def mixed(seen):  # the model's first idea is the untried one, its second the technique that worked
        if task_of(seen) == "ideas":
            count, briefs = asked_counts(seen)
            ideas = [{"title": "Bigger blocks", "description": ".", "briefs": ["b"] * briefs, "technique": "launch-config"},
                     {"title": "Shuffle the rows", "description": ".", "briefs": ["b"] * briefs,
                      "technique": "warp-reductions"}]
            return {"ideas": ideas[:count]}
        return kernels(seen)

    fake.responder = mixed
    seen = len(fake.requests)
    steered = run_search(validated("Softmax, wider rows", "softmax"), prior_weight=100)
    assert "Propose 2 distinct optimization ideas" in ideas_requests(fake, seen)[0]  # 1 implemented + 1 to rank
    assert list(Idea.objects.filter(search=steered).values_list("title", flat=True)) == ["Shuffle the rows"]
    seen = len(fake.requests)
    off = run_search(validated("Softmax, other rows", "softmax"), prior_weight=0)  # the bank off
    assert list(Idea.objects.filter(search=off).values_list("title", flat=True)) == ["Bigger blocks"]
    assert "What worked" not in ideas_requests(fake, seen)[0]


def test_a_repeated_title_with_the_same_technique_is_asked_again_and_another_technique_is_not_a_repeat(problem, fake):
    fake.responder = Tagged([("Warp shuffle rows", "warp-reductions"), ("Warp shuffle rows", "warp-reductions"),
                             ("Warp Shuffle  rows!", "tiling")])
    search = run_search(problem, rounds=2, prior_weight=0)  # one idea asked each time, none ranked away
    asked = ideas_requests(fake)
    assert any("repeated ideas already tried in this search (or itself): Warp shuffle rows." in t for t in asked)
    ideas = list(Idea.objects.filter(search=search).order_by("id").values_list("title", "technique"))
    assert ideas == [("Warp shuffle rows", "warp-reductions"), ("Warp Shuffle  rows!", "tiling")]


def test_a_search_from_the_teams_memory_starts_from_similar_kernels_and_is_offered_the_playbook(problem, fake):
    first = run_search(problem)
    best = Idea.objects.get(search=first).kernels.get()
    similar = validated("Softmax, wider rows", "softmax")
    seen = len(fake.requests)
    second = run_search(similar, seed_from_team=True)
    [copied] = Kernel.objects.filter(search=second, origin="user")
    assert copied.source == best.source and copied.name == f"from the team: #{best.id} on {problem.name}"
    assert copied.status == "correct" and copied.round == 0  # judged on this problem, a parent like any other
    [request] = ideas_requests(fake, seen)
    title, technique, _ = playbook.menu("softmax", "cpu")[0]
    assert "The built-in playbook's recipes for this op family" in request and f"- {title} [{technique}]" in request
    seen = len(fake.requests)
    run_search(similar)  # without the option: neither
    assert "playbook's recipes" not in ideas_requests(fake, seen)[0]
    assert not Kernel.objects.filter(search__seed_from_team=False, origin="user").exists()
    unrelated = run_search(validated("Matmul", "matmul"), seed_from_team=True)
    assert not Kernel.objects.filter(search=unrelated, origin="user").exists()


def test_a_search_stops_when_its_last_rounds_buy_too_little_per_dollar(problem, fake):
    fake.responder = Tagged([(f"Idea {n}", "tiling") for n in range(8)])
    search = run_search(problem, rounds=4, stop_points_per_dollar=1e6)
    assert search.current_round == 2
    assert search.stop_reason.startswith("the last 2 rounds bought ") and "under the 1e+06 set" in search.stop_reason
    assert run_search(problem, rounds=3).stop_reason == "completed all 3 rounds"  # off by default
