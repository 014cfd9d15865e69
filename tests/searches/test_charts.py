"""The search and kernel pages' charts, from rows in a real database: empty rounds break the
speedup lines, a slow run is counted apart from the timing body, every chart has its note."""

import re

import pytest
from django.urls import reverse

from searches.models import BenchmarkRun
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(client):
    user = d.user()
    client.force_login(user)
    return user


def test_a_round_without_a_ranked_kernel_breaks_the_speedup_lines(client, alice):
    p = d.problem()
    s = d.search(problem=p, created_by=alice, rounds=4, current_round=3)
    seed = d.kernel(problem=p, search=s, round=0, origin="seed", median_ms=1.0)
    d.kernel(problem=p, search=s, parent=seed, round=1, median_ms=0.8)
    d.kernel(problem=p, search=s, parent=seed, round=2, status="compile_error")  # round 2 ranks nothing
    d.kernel(problem=p, search=s, parent=seed, round=3, median_ms=0.5)
    html = client.get(reverse("search_detail", args=[s.code])).content.decode()
    chart = html.split('id="chart-card"')[1].split("</section>")[0]
    eager = re.findall(r'<polyline class="line-eager" points="([^"]+)"', chart)
    assert [len(line.split()) for line in eager] == [2]  # R0-R1 joined; R3 on its own
    assert len(re.findall(r'class="dot-eager"', chart)) == 3
    assert re.search(r'<text class="empty-round"[^>]*>R2</text>', chart)
    assert "a gap is a round that ranked no kernel" in chart


def test_the_kernel_page_counts_a_slow_run_apart_and_explains_the_error_columns(client, alice):
    p = d.problem()
    k = d.kernel(problem=p, search=d.search(problem=p, created_by=alice), median_ms=0.3)
    run = BenchmarkRun.objects.get(kernel=k)
    run.timing = {**run.timing, "samples_ms": run.timing["samples_ms"][:49] + [4.19]}
    run.save()
    html = client.get(reverse("kernel_detail", args=[k.code])).content.decode()
    assert len(re.findall(r'<rect class="bar" ', html)) >= 5  # the body is not one squeezed bar
    assert re.search(r'<rect class="bar outlier"[^>]*><title>1 outlier\(s\), out to 4.19 ms</title>', html)
    assert "1 outlier beyond Q3 + 3×IQR" in html
    note = html.split('id="err-columns"')[1].split("</p>")[0]
    assert "<strong>err</strong>" in note and "<strong>fp32 ref err</strong>" in note
