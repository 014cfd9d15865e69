"""A crowd on one search page shares one render of its tree per change: the tree, the charts and
the counts are built once per (search, last_event_seq) and served from Django's cache; the
per-viewer parts (controls, forms) are not cached; the next event shows on the next load."""

import pytest
from django.db import transaction
from django.urls import reverse

from live import events
from searches.views import searches as search_views
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


@pytest.fixture
def big_search():
    owner = d.user("owner")
    problem = d.problem()
    search = d.search(problem=problem, created_by=owner)
    root = d.kernel(problem=problem, search=search, name="root")
    for i in range(30):
        idea = d.idea(search=search, parent_kernel=root, title=f"idea {i}")
        d.kernel(problem=problem, search=search, idea=idea, parent=root, round=2, name=f"k{i}", median_ms=0.4)
    with transaction.atomic():  # the rows above were written without events: one event stands for them
        events.publish(search.id, "round.started", {"round": 2})
    return owner, search


@pytest.fixture
def renders(monkeypatch):
    count = []
    real = search_views.render_tree
    monkeypatch.setattr(search_views, "render_tree", lambda *a, **k: count.append(1) or real(*a, **k))
    return count


def test_a_second_load_reuses_the_tree_and_its_queries_drop(client, big_search, renders,
                                                          django_assert_max_num_queries):
    owner, search = big_search
    client.force_login(owner)
    url = reverse("search_detail", args=[search.code])
    first = client.get(url)
    assert first.status_code == 200 and len(renders) == 1
    with django_assert_max_num_queries(14):  # session, user, search, stalls, forms: none reads the tree
        second = client.get(url)
    assert len(renders) == 1
    assert second.context["tree_part"] is not None and second.context["tree_part"] == first.context["tree_part"]


def test_the_next_event_shows_on_the_next_load(client, big_search, renders):
    owner, search = big_search
    client.force_login(owner)
    url = reverse("search_detail", args=[search.code])
    assert "fresh-verdict" not in client.get(url).content.decode()
    d.kernel(problem=search.problem, search=search, name="fresh-verdict", median_ms=0.1, publish=True)
    page = client.get(url).content.decode()
    assert "fresh-verdict" in page and len(renders) == 2
    client.get(url)
    assert len(renders) == 2


def test_per_viewer_parts_stay_out_of_the_shared_render(client, big_search, renders):
    owner, search = big_search
    client.force_login(owner)
    url = reverse("search_detail", args=[search.code])
    assert 'id="btn-pause"' in client.get(url).content.decode()
    client.force_login(d.user("bob"))
    page = client.get(url).content.decode()
    assert 'id="btn-pause"' not in page and 'id="add-idea"' not in page  # bob may not steer it
    assert "k29" in page and len(renders) == 1  # yet he got the same tree, from the cache


def test_filters_and_the_insights_fragment_are_cached_apart(client, big_search, renders, monkeypatch):
    reads = []
    real = search_views.selectors.search_tree
    monkeypatch.setattr(search_views.selectors, "search_tree", lambda **k: reads.append(1) or real(**k))
    owner, search = big_search
    client.force_login(owner)
    url = reverse("search_detail", args=[search.code])
    client.get(url)
    client.get(url, {"round": "1"})
    client.get(url, {"round": "1"})
    assert len(renders) == 2  # the filtered tree is its own entry
    insights = reverse("search_insights", args=[search.code])
    assert client.get(insights).context["insights_html"] == client.get(insights).context["insights_html"]
    assert len(reads) == 3  # the page, its filtered version, the fragment: each read once


def test_a_cache_that_is_down_costs_the_render_not_the_page(client, big_search, renders, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:1/0"}}  # nothing listens on port 1
    owner, search = big_search
    client.force_login(owner)
    url = reverse("search_detail", args=[search.code])
    for _ in range(2):
        response = client.get(url)
        assert response.status_code == 200 and "k29" in response.content.decode()
    assert len(renders) == 2


@pytest.mark.django_db(transaction=True)
def test_a_crowd_arriving_together_after_an_event_waits_for_one_render(big_search, renders):
    """Each request's view runs on its own thread: eight loads that all miss the cache at once
    still render the tree once."""
    import threading

    from django.db import connection
    from django.test import Client

    owner, search = big_search
    url = reverse("search_detail", args=[search.code])
    start, statuses = threading.Barrier(8), []

    def load():
        client = Client()
        client.force_login(owner)
        start.wait()
        try:
            statuses.append(client.get(url).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 8
    assert len(renders) == 1


def test_the_gzipped_page_is_the_plain_page(client, big_search):
    """The tree is compressed once and spliced into each response: what a browser inflates is
    byte for byte what a client without gzip gets, with the viewer's own parts around it."""
    import gzip

    owner, search = big_search
    client.force_login(owner)
    url = reverse("search_detail", args=[search.code])
    plain = client.get(url)
    zipped = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert "Content-Encoding" not in plain and zipped["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in zipped["Vary"] and int(zipped["Content-Length"]) == len(zipped.content)
    page = gzip.decompress(zipped.content).decode()
    # CSRF tokens are masked afresh per response, and the elapsed seconds move on between the two
    # requests on a busy host: compare the pages without them.
    strip = __import__("re").compile(r'name="csrfmiddlewaretoken" value="[^"]+"|(?<=id="p-elapsed")[^<]*')
    assert strip.sub("", page) == strip.sub("", plain.content.decode())
    assert "k29" in page and 'id="btn-pause"' in page and search_views.TREE_MARKER not in page
