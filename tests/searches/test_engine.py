"""The engine's state machine and the search services, step by step on the database, with the
real playbook proposer. Verdicts are recorded through `kernel_record_verdict` with dicts in the
runner's result format (the real runner's side is covered by test_engine_e2e.py)."""

import pytest
from django.core.exceptions import ValidationError

from evaluation import leases
from evaluation.models import EvaluationJob
from live.models import SearchEvent
from searches import services
from searches.catalog import get as catalog_get
from searches.engine import kick, loop
from searches.models import BenchmarkRun, Idea, Kernel, Problem, ProposerCall, Search

pytestmark = pytest.mark.django_db


def runner_verdict(status="correct", median_ms=1.0, seed=11, device_name="test-cpu", log=""):
    correct = status == "correct"
    return {
        "schema": 1, "status": status, "reason": "" if correct else f"{status} in test", "quarantined": False,
        "quarantine_reason": "", "seed": seed, "precision": "fp32", "compile": {"seconds": 0.1, "log": log},
        "correctness": {"atol": 1e-4, "rtol": 1e-4, "passed": correct, "per_distribution": []},
        "timing": {"median_ms": median_ms, "n": 10} if correct else None,
        "baseline": {"eager_ms": 2.0, "compile_ms": 1.5, "compile_mode": "default"},
        "speedup_vs_eager": 2.0 / median_ms if correct else None,
        "speedup_vs_compile": 1.5 / median_ms if correct else None,
        "environment": {"device_name": device_name, "torch": "2.13", "runner_version": "t"},
    }


@pytest.fixture(autouse=True)
def kicks():
    """Record kicks instead of queueing tasks: each test drives `loop.advance` itself."""
    seen = []
    kick.set_kicker(seen.append)
    yield seen
    kick.set_kicker(None)


@pytest.fixture
def problem():
    entry = catalog_get("softmax-cpu")
    problem = services.problem_create(user=None, name=entry.name, source=entry.source, device="cpu",
                                      catalog_key=entry.key, family=entry.family)
    job = problem.jobs.get()
    services.problem_record_validation(problem=problem, job=job, result={
        "schema": 1, "status": "ok", "reason": "", "outputs": [{"shape": [128, 4096], "dtype": "float32"}],
        "family": "softmax", "flops": 1.0, "min_bytes": 1.0,
        "baseline": {"eager_ms": 2.0, "compile_ms": 1.5, "compile_mode": "default"}, "environment": {},
    })
    problem.refresh_from_db()
    return problem


def start(problem, **knobs):
    options = dict(proposer="playbook", device="cpu", rounds=2, parents_per_round=1, ideas_per_parent=1,
                   kernels_per_idea=2, bank_size=0)
    options.update(knobs)
    return services.search_start(problem=problem, user=None, **options)


def evaluate_all(search, median_for=lambda kernel: 1.0, status_for=lambda kernel: "correct"):
    """Give every queued job of the search a verdict, as an evaluation worker would."""
    done = 0
    while (job := leases.claim("test-worker", "cpu")) is not None:
        kernel = job.kernel
        services.kernel_record_verdict(kernel=kernel, job=job,
                                       result=runner_verdict(status_for(kernel), median_for(kernel)))
        done += 1
    return done


def test_a_playbook_search_runs_its_rounds_and_completes(problem):
    search = start(problem)
    loop.advance(search.id)
    search.refresh_from_db()
    assert search.status == "running"
    [seed] = Kernel.objects.filter(search=search)
    assert seed.origin == "seed" and seed.jobs.get().status == "queued"
    loop.advance(search.id)  # nothing to do until the verdict: nothing duplicated
    assert Kernel.objects.filter(search=search).count() == 1

    assert evaluate_all(search, median_for=lambda k: 3.0) == 1
    loop.advance(search.id)
    search.refresh_from_db()
    assert search.current_round == 1 and search.round_parents["1"]["parents"] == [seed.id]
    round1 = Kernel.objects.filter(search=search, round=1)
    assert [(k.origin, k.variant, k.parent_id) for k in round1] == [("playbook", 0, seed.id), ("playbook", 1, seed.id)]

    evaluate_all(search, median_for=lambda k: 2.0 if k.variant == 0 else 2.5)
    loop.advance(search.id)
    search.refresh_from_db()
    best = round1.get(variant=0)
    assert search.current_round == 2 and search.round_parents["2"]["parents"] == [best.id]
    assert evaluate_all(search) == 2
    loop.advance(search.id)
    search.refresh_from_db()
    assert (search.status, search.stop_reason) == ("completed", "completed all 2 rounds")
    assert search.candidates_evaluated == 5 == BenchmarkRun.objects.filter(kernel__search=search).count()
    assert ProposerCall.objects.filter(search=search, purpose="ideas").count() == 2
    # The second round's idea was chosen knowing the first one.
    assert len(set(Idea.objects.filter(search=search).values_list("title", flat=True))) == 2
    seqs = list(SearchEvent.objects.filter(search=search).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    # The fastest three are queued for a verified rerun with a fresh seed.
    reruns = EvaluationJob.objects.filter(kernel__search=search, purpose="rerun", status="queued")
    fastest = sorted(Kernel.objects.filter(search=search), key=lambda k: k.median_ms)[:3]
    assert sorted(job.kernel_id for job in reruns) == sorted(k.id for k in fastest)
    assert all(job.seed not in {11, None} for job in reruns)


def test_a_verdict_reported_twice_is_recorded_once(problem, kicks):
    search = start(problem)
    loop.advance(search.id)
    job = leases.claim("w", "cpu")
    first = services.kernel_record_verdict(kernel=job.kernel, job=job, result=runner_verdict())
    again = services.kernel_record_verdict(kernel=job.kernel, job=job, result=runner_verdict(median_ms=9.0))
    assert first.pk == again.pk and BenchmarkRun.objects.count() == 1
    search.refresh_from_db()
    assert search.candidates_evaluated == 1
    job.kernel.refresh_from_db()
    assert job.kernel.median_ms == 1.0 and job.kernel.device_name == "test-cpu"


def test_the_candidate_budget_stops_the_search_once_its_work_is_done(problem):
    search = start(problem, max_candidates=2, rounds=5)
    loop.advance(search.id)
    evaluate_all(search)
    loop.advance(search.id)
    evaluate_all(search)
    loop.advance(search.id)
    search.refresh_from_db()
    assert search.status == "completed"
    assert search.stop_reason == "budget reached: 2 of at most 2 candidates"
    assert Kernel.objects.filter(search=search).count() == 2


def test_token_and_cost_budgets():
    search = Search(tokens_in=60, tokens_out=40, cost_usd=0.2, max_tokens=100)
    assert loop.budget_reached(search) == "budget reached: 100 of at most 100 tokens"
    search.max_tokens, search.max_cost_usd = None, 0.2
    assert loop.budget_reached(search) == "budget reached: $0.2000 of at most $0.2000"
    search.max_cost_usd = 0.3
    assert loop.budget_reached(search) == ""


def test_pause_stops_new_work_and_resume_continues(problem, kicks):
    search = start(problem)
    services.search_pause(search=search, user=None)
    loop.advance(search.id)
    assert not Kernel.objects.filter(search=search).exists()
    services.search_resume(search=search, user=None)
    assert kicks[-1] == search.id if kicks else True
    loop.advance(search.id)
    assert Kernel.objects.filter(search=search, origin="seed").count() == 1
    with pytest.raises(ValidationError, match="Only a paused search can be resumed"):
        services.search_resume(search=search, user=None)


def test_a_kernel_the_worker_could_not_run_pauses_the_search_and_resume_runs_it_again(problem):
    # On the H200 a starting kernel's job was handed back three times ("the device had 3338 MB of
    # 143155 MB free: other work held the rest") and the search ended "no correct kernel to build on"
    search = start(problem)
    loop.advance(search.id)
    seed = Kernel.objects.get(search=search, origin="seed")
    busy = "the worker's device could not run it (an infrastructure failure, not a verdict): device full"
    while (job := leases.claim("test-worker", "cpu")) is not None:
        leases.release(job, "test-worker", error=busy, count_attempt=True)
    seed.refresh_from_db()
    assert seed.status == "failed" and seed.reason == busy
    loop.advance(search.id)
    search.refresh_from_db()
    assert search.status == Search.Status.PAUSED
    assert search.stop_reason == (f"paused after round 0: 1 candidate(s) could not be evaluated ({busy}). "
                                  "Resume the search to evaluate them again.")

    services.search_resume(search=search, user=None)
    seed.refresh_from_db()
    assert (seed.status, seed.reason) == ("pending", "")
    assert evaluate_all(search) == 1  # a new job for the same kernel, judged this time
    seed.refresh_from_db()
    assert seed.status == "correct" and seed.runs.count() == 1
    loop.advance(search.id)
    search.refresh_from_db()
    assert search.status == Search.Status.RUNNING and search.current_round == 1  # built on it


def test_cancel_drops_queued_candidates_with_the_reason(problem):
    search = start(problem)
    loop.advance(search.id)
    services.search_cancel(search=search, user=None)
    seed = Kernel.objects.get(search=search)
    assert seed.status == "failed" and seed.reason == "not evaluated: the search was cancelled"
    assert seed.jobs.get().status == "failed"
    loop.advance(search.id)
    assert Kernel.objects.filter(search=search).count() == 1


def test_fork_copies_the_ancestor_path_and_builds_on_it(problem):
    search = start(problem, rounds=1)
    loop.advance(search.id)
    evaluate_all(search, median_for=lambda k: 3.0)
    loop.advance(search.id)
    evaluate_all(search, median_for=lambda k: 1.0 + k.variant)
    chosen = Kernel.objects.get(search=search, round=1, variant=1)

    fork = services.search_fork(search=search, user=None, from_kernel=chosen, rounds=1, kernels_per_idea=1)
    copies = list(Kernel.objects.filter(search=fork).order_by("id"))
    assert [k.origin for k in copies] == ["fork", "fork"]
    assert [k.source for k in copies] == [chosen.parent.source, chosen.source]
    assert copies[1].parent_id == copies[0].id and copies[1].median_ms == chosen.median_ms
    assert copies[1].idea.title == chosen.idea.title
    assert fork.forked_from_id == search.id and fork.forked_from_kernel_id == chosen.id
    assert (fork.current_round, fork.round_parents) == (1, {"1": {"parents": [copies[1].id], "asked": []}})

    loop.advance(fork.id)
    new = Kernel.objects.filter(search=fork, round=1)
    assert [(k.origin, k.parent_id) for k in new] == [("playbook", copies[1].id)]
    assert new[0].idea.title != chosen.idea.title  # the carried history counts as tried


def test_rerun_verifies_a_kernel_that_reproduces_within_ten_percent(problem):
    search = start(problem)
    loop.advance(search.id)
    evaluate_all(search, median_for=lambda k: 2.0)
    kernel = Kernel.objects.get(search=search)
    job = services.kernel_request_rerun(kernel=kernel, user=None)
    assert job.purpose == "rerun" and job.seed and job.seed != 11
    assert services.kernel_request_rerun(kernel=kernel, user=None).pk == job.pk
    claimed = leases.claim("w", "cpu")
    services.kernel_record_verdict(kernel=kernel, job=claimed, result=runner_verdict(median_ms=2.15, seed=job.seed))
    kernel.refresh_from_db()
    assert kernel.verified and kernel.median_ms == 2.0

    job = services.kernel_request_rerun(kernel=kernel, user=None)
    claimed = leases.claim("w", "cpu")
    services.kernel_record_verdict(kernel=kernel, job=claimed, result=runner_verdict(median_ms=2.5, seed=job.seed))
    kernel.refresh_from_db()
    assert not kernel.verified
    search.refresh_from_db()
    assert search.candidates_evaluated == 1  # reruns are not candidates


def test_start_refuses_with_a_reason(problem, monkeypatch):
    pending = services.problem_create(user=None, name="Pending", source=problem.source)
    with pytest.raises(ValidationError, match="still being validated"):
        start(pending)
    with pytest.raises(ValidationError, match="kernels per idea must be a whole number from 1 to 20"):
        start(problem, kernels_per_idea=0)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValidationError, match="needs an API key: set ANTHROPIC_API_KEY"):
        start(problem, proposer="anthropic")
    Problem.objects.filter(pk=problem.pk).update(family="")
    problem.refresh_from_db()
    with pytest.raises(ValidationError, match="this problem needs an LLM"):
        start(problem)
    Problem.objects.filter(pk=problem.pk).update(family="softmax")
    problem.refresh_from_db()
    with pytest.raises(ValidationError, match="max cost"):
        start(problem, max_cost_usd=-1)
    with pytest.raises(ValidationError, match="Unknown effort 'extreme'"):
        start(problem, effort="extreme")


def test_people_join_in_ideas_need_an_llm_and_kernels_are_user_nodes(problem):
    search = start(problem)
    loop.advance(search.id)
    seed = Kernel.objects.get(search=search)
    with pytest.raises(ValidationError, match="only implements its own ideas"):
        services.idea_add(search=search, user=None, parent_kernel=seed, title="Use AVX-512", description="")
    mine = services.kernel_submit(user=None, problem=problem, search=search, parent=seed, source=seed.source,
                                  name="hand-written")
    assert (mine.origin, mine.parent_id, mine.jobs.get().purpose) == ("user", seed.id, "search")
    assert SearchEvent.objects.filter(search=search, kind="kernel.created").count() == 2
    with pytest.raises(ValidationError, match="must define `class ModelNew"):
        services.kernel_submit(user=None, problem=problem, source="print('hi')")
    loose = services.kernel_submit(user=None, problem=problem, source=seed.source)
    assert loose.search is None and loose.jobs.get().purpose == EvaluationJob.Purpose.MANUAL
    # The round waits for the user's kernel too, then goes on.
    evaluate_all(search)
    loop.advance(search.id)
    search.refresh_from_db()
    assert search.current_round == 1


def test_a_playbook_search_it_cannot_continue_ends_with_the_reason_not_paused(problem, monkeypatch):
    from proposers.base import ProposerError
    from proposers.playbook import PlaybookProposer

    def cannot(self, problem):
        raise ProposerError("no recipe reads this reduction's expression.")
    monkeypatch.setattr(PlaybookProposer, "starting_kernel", cannot)
    search = start(problem)
    loop.advance(search.id)
    search.refresh_from_db()
    assert search.status == Search.Status.COMPLETED
    assert search.stop_reason.startswith(
        "not supported by the built-in kernels: no recipe reads this reduction's expression. Submit a kernel")
