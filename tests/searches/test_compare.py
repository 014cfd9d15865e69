"""/compare/ on sources too large to diff in the web process: the page answers, says so, and
offers both sources instead."""

import pytest
from django.urls import reverse

from searches import services
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db

BIG = "# a comment line of a kernel that is mostly comments\n" * 3_900  # ~200 KB


@pytest.fixture
def big_pair():
    problem = d.problem()
    return d.kernel(problem=problem, source=BIG + "x = 1\n"), d.kernel(problem=problem, source=BIG + "x = 2\n")


def test_two_200_kb_kernels_compare_without_a_diff_and_with_both_downloads(client, big_pair):
    client.force_login(d.user())
    a, b = big_pair
    response = client.get(reverse("compare"), {"a": a.code, "b": b.code})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="diff-refused">Too large to diff here — download both' in html
    assert "206,706 characters" in html and 'class="diff' not in html
    for k in big_pair:
        assert f'href="{reverse("kernel_export", args=[k.code])}" download' in html


def test_a_shared_comparison_of_them_links_both_kernels_pages(client, big_pair):
    a, b = big_pair
    _, token = services.share_link_create(user=d.user(), kind="compare", kernel=a, other_kernel=b)
    html = client.get(reverse("shared", args=[token])).content.decode()
    assert "Too large to diff here — open both" in html
    for k in big_pair:
        assert f'href="{reverse("shared_kernel", args=[token, k.code])}"' in html
