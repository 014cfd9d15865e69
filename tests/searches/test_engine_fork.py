"""Fork with options through the search page's form: the new search takes the options, starts
from the source's B best kernels (shared ancestors copied once) and its first ideas call is
shown them, as the Anthropic proposer's request to the fake Messages API says."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from searches import services
from searches.engine import loop
from searches.models import Kernel, Search
from tests.fakes.anthropic_server import task_of

from .test_engine import problem  # noqa: F401  (fixture)
from .test_engine_llm import fake, judge, kicks  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads


def playbook_search(problem):
    search = services.search_start(problem=problem, user=None, proposer="playbook", device="cpu", rounds=1,
                                   parents_per_round=1, ideas_per_parent=1, kernels_per_idea=2, bank_size=0)
    loop.advance(search.id)
    judge(median_for=lambda k: 3.0)
    loop.advance(search.id)
    judge(median_for=lambda k: {0: 1.0, 1: 2.0}.get(k.variant, 3.0))
    loop.advance(search.id)
    search.refresh_from_db()
    return search


def fork_post(client, search, **fields):
    data = {f"fork-{k}": v for k, v in {
        "proposer": "anthropic", "model": "", "effort": "", "language": "", "rounds": 1, "parents_per_round": 2,
        "ideas_per_parent": 1, "kernels_per_idea": 1, "bank_size": 0, "repair_attempts": 1, "stale_rounds": 0,
        "max_candidates": "", "max_tokens": "", "max_cost_usd": "", **fields}.items()}
    return client.post(reverse("search_fork", args=[search.code]), data)


def test_fork_a_playbook_search_with_the_anthropic_proposer_from_its_best_kernels(problem, fake, client):
    source = playbook_search(problem)
    assert source.status == "completed"
    client.force_login(User.objects.create_user("forker", password="x"))
    page = client.get(reverse("search_detail", args=[source.code])).content.decode()
    assert 'id="fork-form"' in page and "Built-in hand-written kernels (no AI)" in page
    response = fork_post(client, source, max_candidates=9, stale_rounds=2)
    fork = Search.objects.exclude(pk=source.pk).get()
    assert response.status_code == 302 and response.url == reverse("search_detail", args=[fork.code])
    assert (fork.proposer, fork.model, fork.parents_per_round, fork.max_candidates, fork.stale_rounds) == (
        "anthropic", "claude-sonnet-4-6", 2, 9, 2)
    best = list(Kernel.objects.filter(search=source, status="correct").order_by("median_ms")[:2])
    parents = [Kernel.objects.get(pk=pk) for pk in fork.round_parents["1"]["parents"]]
    assert [p.source for p in parents] == [b.source for b in best] and {p.origin for p in parents} == {"fork"}
    # Both descend from the starting kernel: its copy is made once and is both parents' parent.
    assert parents[0].parent_id == parents[1].parent_id is not None
    assert Kernel.objects.filter(search=fork).count() == 3
    loop.advance(fork.id)
    asked = [s for s in fake.requests if task_of(s) == "ideas"]
    assert len(asked) == 2
    for parent, seen in zip(parents, asked):  # each parent shown, or named in the bank: its source sent once
        assert f"Kernel #{parent.id}" in seen.user_text or f" above (#{parent.id}; its verdict" in seen.user_text
        assert (seen.system_text + seen.user_text).count(parent.source.strip()) == 1
    assert best[0].source.strip() in asked[0].system_text  # the copies are the fork's bank
    fork_page = client.get(reverse("search_detail", args=[fork.code])).content.decode()
    assert 'id="playbook-note"' not in fork_page  # an LLM's ideas do see their parent


def test_a_language_that_does_not_fit_the_device_is_refused_with_the_choices(problem, fake, client):
    source = playbook_search(problem)
    client.force_login(User.objects.create_user("forker", password="x"))
    response = fork_post(client, source, language="triton")
    assert Search.objects.count() == 1
    page = client.get(response.url).content.decode()
    assert "Language &#x27;triton&#x27; does not fit a cpu search: choose one of c" in page


def test_a_playbook_search_that_runs_out_of_ideas_says_so_and_its_kernels_show_no_exchange(problem, client):
    search = services.search_start(problem=problem, user=None, proposer="playbook", device="cpu", rounds=5,
                                   parents_per_round=1, ideas_per_parent=20, kernels_per_idea=1, bank_size=0)
    for _ in range(3):
        loop.advance(search.id)
        judge()
    search.refresh_from_db()
    made = Kernel.objects.filter(search=search).count()
    assert (search.status, search.stop_reason) == (
        "completed", f"the proposer had no new ideas after round 1 — {made} of 100 candidates")
    client.force_login(User.objects.create_user("reader", password="x"))
    kernel = Kernel.objects.filter(search=search, round=1).first()
    page = client.get(reverse("kernel_detail", args=[kernel.code])).content.decode()
    assert 'id="exchange"' not in page  # hand-written text, not a model's reply
    tree_page = client.get(reverse("search_detail", args=[search.code])).content.decode()
    assert 'id="playbook-note"' in tree_page and "none is conditioned on the kernel it hangs under" in tree_page
