"""The search page's server-drawn parts: speedup over time, outcomes per idea, and the fragment
the page fetches again as verdicts land (charts, ideas table, provenance)."""

from datetime import timedelta

import pytest
from django.urls import reverse

from searches import selectors
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


@pytest.fixture
def search(client):
    user = d.user()
    client.force_login(user)
    p = d.problem()
    s = d.search(problem=p, created_by=user)
    seed = d.kernel(problem=p, search=s, round=0, origin="seed", median_ms=1.0, name="seed")
    idea = d.idea(search=s, parent_kernel=seed, title="Tile <it>")
    d.kernel(problem=p, search=s, idea=idea, parent=seed, median_ms=0.5, name="fast")
    d.kernel(problem=p, search=s, idea=idea, parent=seed, status="crashed", name="crash")
    d.kernel(problem=p, search=s, idea=idea, parent=seed, status="pending", name="waits")
    return s


def test_speedups_over_time_count_from_the_search_start(search):
    search.kernels.filter(name="fast").update(evaluated_at=search.started_at + timedelta(seconds=42))
    search.kernels.filter(name="seed").update(evaluated_at=search.started_at - timedelta(days=1))  # a fork's copy
    points = selectors.search_speedup_over_time(selectors.search_tree(search=search), search.started_at)
    assert sorted((round(p["t"]), p["eager"]) for p in points) == [(0, 1.0), (42, 2.0)]


def test_speedups_over_candidates_count_every_judged_candidate_failures_included(search):
    start = search.started_at
    for name, seconds in (("seed", 1), ("crash", 2), ("fast", 3)):
        search.kernels.filter(name=name).update(evaluated_at=start + timedelta(seconds=seconds))
    assert search.kernels.filter(name="crash").exclude(status="correct").exists()
    points = selectors.search_speedup_over_time(selectors.search_tree(search=search), start)
    # The crashed kernel is not drawn but costs candidate number 2, so the fast one is the third.
    assert sorted((p["n"], p["eager"]) for p in points) == [(1, 1.0), (3, 2.0)]


def test_idea_outcomes_split_correct_failed_and_waiting(search):
    stats = selectors.search_idea_stats(selectors.search_tree(search=search))
    assert selectors.search_idea_outcomes(stats) == [
        {"title": "Tile <it>", "correct": 1, "failed": 1, "waiting": 1, "best": 2.0}]


def test_each_ideas_repairs_count_how_many_came_back_correct(client, search):
    idea, crash = search.ideas.get(), search.kernels.get(name="crash")
    d.kernel(problem=search.problem, search=search, idea=idea, parent=crash, origin="repair", repair_of=crash,
             name="fixed")
    d.kernel(problem=search.problem, search=search, idea=idea, parent=crash, origin="repair", status="incorrect",
             name="still wrong")
    [stats] = selectors.search_idea_stats(selectors.search_tree(search=search))
    assert (stats["repairs"], stats["repairs_fixed"]) == (2, 1)
    html = client.get(reverse("search_insights", args=[search.code])).content.decode()
    assert '<td class="num">1/2</td>' in html


def test_the_page_and_its_live_fragment_draw_both_charts_and_the_provenance(client, search):
    for url in (reverse("search_detail", args=[search.code]), reverse("search_insights", args=[search.code])):
        html = client.get(url).content.decode()
        assert 'id="time-chart-card"' in html and "svg class=\"chart over-time\"" in html, url
        assert 'aria-label="Speedup of each ranked kernel over candidates' in html, url
        assert 'svg class="chart ideas"' in html and "Tile &lt;it&gt;" in html, url
        assert html.count('id="provenance"') == 1 and d.ENV["driver"] in html, url


def test_a_bounded_flop_count_makes_the_speed_of_light_an_upper_bound(client, search):
    problem = search.problem
    problem.flops, problem.min_bytes = 51e12 * 1e-3, 0  # 1 ms of H200 fp32 compute: "fast" (0.5 ms) reads 200%
    problem.save()
    fast = search.kernels.get(name="fast")
    exact = selectors.speed_of_light(problem, fast)
    problem.validation = {**problem.validation, "flops_upper_bound": True}
    problem.save()
    bound = selectors.speed_of_light(problem, fast)
    assert exact["upper_bound"] is False and bound["upper_bound"] is True
    assert bound["basis"].startswith("at most") and "overstates the work" in bound["basis"]
    page = client.get(reverse("kernel_detail", args=[fast.code])).content.decode()
    assert "at most" in page and "overstates the work" in page
    assert 'id="flops-upper-bound"' in client.get(reverse("problem_detail", args=[problem.code])).content.decode()
