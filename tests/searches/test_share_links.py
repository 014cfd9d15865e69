"""Share links: unguessable, stored hashed, read-only without a login, revocable."""

import hashlib
import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from searches import services
from searches.models import ShareLink
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(client):
    alice = d.user("alice")
    client.force_login(alice)
    p = d.problem(name="Softmax")
    s = d.search(problem=p, created_by=alice)
    seed = d.kernel(problem=p, search=s, round=0, median_ms=1.0, name="seed")
    idea = d.idea(search=s, parent_kernel=seed, title="Warp shuffles")
    best = d.kernel(problem=p, search=s, idea=idea, parent=seed, median_ms=0.4, name="shuffled")
    return {"alice": alice, "problem": p, "search": s, "seed": seed, "best": best}


def create_via_page(client, url, data=None):
    response = client.post(url, {"label": "for the paper", **(data or {})})
    assert response.status_code == 200, response.content[:500]
    assert response["Cache-Control"] == "no-store"
    return re.search(r'value="http://testserver(/s/[^"]+/)"', response.content.decode()).group(1)


def test_token_is_long_random_and_only_its_hash_is_stored(client, world):
    path = create_via_page(client, reverse("share_kernel", args=[world["best"].code]))
    token = path.split("/")[2]
    assert len(token) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", token)
    link = ShareLink.objects.get()
    assert link.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in repr(list(ShareLink.objects.values()))
    # The manage list on the page shows the link but not the token.
    html = client.get(reverse("kernel_detail", args=[world["best"].code])).content.decode()
    assert "for the paper" in html and token not in html


@pytest.mark.parametrize("kind", ["kernel", "search", "leaderboard", "compare"])
def test_each_kind_opens_read_only_without_login(client, world, kind):
    best, seed = world["best"], world["seed"]
    url, data = {
        "kernel": (reverse("share_kernel", args=[best.code]), {}),
        "search": (reverse("share_search", args=[world["search"].code]), {}),
        "leaderboard": (reverse("share_leaderboard", args=[world["problem"].code]), {"device": "NVIDIA H200"}),
        "compare": (reverse("share_compare"), {"a": seed.code, "b": best.code}),
    }[kind]
    path = create_via_page(client, url, data)
    client.logout()
    response = client.get(path)
    html = response.content.decode()
    assert response.status_code == 200
    assert "shuffled" in html and "Read-only shared" in html
    assert "NVIDIA H200" in html and "580.65" in html and "2.11.0+cu130" in html  # provenance
    assert "csrfmiddlewaretoken" not in html and 'method="post"' not in html
    assert f'"{reverse("kernel_detail", args=[best.code])}' not in html  # no links into the logged-in site
    assert response["Referrer-Policy"] == "no-referrer" and "noindex" in response["X-Robots-Tag"]
    assert "no-store" in response["Cache-Control"] and "script-src 'self'" in response["Content-Security-Policy"]


def test_revoked_links_answer_404(client, world):
    path = create_via_page(client, reverse("share_search", args=[world["search"].code]))
    link = ShareLink.objects.get()
    response = client.post(reverse("share_revoke", args=[link.pk]), {"next": "https://evil.example/"})
    assert response["Location"] == reverse("search_detail", args=[world["search"].code])  # no open redirect
    client.logout()
    assert client.get(path).status_code == 404


def test_unknown_or_hashed_tokens_answer_404(client, world):
    create_via_page(client, reverse("share_kernel", args=[world["best"].code]))
    client.logout()
    assert client.get("/s/not-a-token/").status_code == 404
    assert client.get(f"/s/{ShareLink.objects.get().token_hash}/").status_code == 404


def test_only_the_creator_or_staff_can_revoke(client, world):
    link, token = services.share_link_create(user=world["alice"], kind="kernel", kernel=world["best"])
    bob = d.user("bob")
    with pytest.raises(PermissionDenied):
        services.share_link_revoke(link=link, user=bob)
    client.force_login(bob)
    response = client.post(reverse("share_revoke", args=[link.pk]), follow=True)
    assert "Only the person who created this link" in response.content.decode()
    assert client.get(f"/s/{token}/").status_code == 200
    services.share_link_revoke(link=link, user=d.user("root", is_staff=True))
    assert client.get(f"/s/{token}/").status_code == 404


def test_create_checks_what_the_link_points_at(world):
    alice = world["alice"]
    with pytest.raises(ValidationError, match="needs exactly: kernel, other_kernel"):
        services.share_link_create(user=alice, kind="compare", kernel=world["best"])
    with pytest.raises(ValidationError, match="Unknown kind"):
        services.share_link_create(user=alice, kind="everything")
    with pytest.raises(ValidationError, match="needs exactly: search"):
        services.share_link_create(user=alice, kind="search", search=world["search"], kernel=world["best"])


def test_comparing_unrelated_problems_cannot_be_shared(client, world):
    other = d.kernel(problem=d.problem(name="Conv", outputs=((4, 4), "float16")))
    response = client.post(reverse("share_compare"), {"a": world["best"].code, "b": other.code}, follow=True)
    assert "different outputs" in response.content.decode()
    assert not ShareLink.objects.exists()


def test_creating_and_revoking_need_a_login(client, world):
    client.logout()
    response = client.post(reverse("share_kernel", args=[world["best"].code]))
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert not ShareLink.objects.exists()


def test_shared_pages_link_to_token_scoped_kernel_pages(client, world):
    path = create_via_page(client, reverse("share_search", args=[world["search"].code]))
    token = path.split("/")[2]
    other = d.kernel(problem=world["problem"], search=d.search(problem=world["problem"]), name="elsewhere")
    client.logout()
    html = client.get(path).content.decode()
    best_url = reverse("shared_kernel", args=[token, world["best"].code])
    assert f'href="{best_url}"' in html and reverse("shared_kernel", args=[token, world["seed"].code]) in html
    page = client.get(best_url)
    body = page.content.decode()
    assert page.status_code == 200 and "shuffled" in body and "Read-only shared search" in body
    assert f'href="{reverse("shared_kernel", args=[token, world["seed"].code])}"' in body  # parent, same search
    assert f'href="{path}"' in body and "csrfmiddlewaretoken" not in body
    assert page["Referrer-Policy"] == "no-referrer" and "no-store" in page["Cache-Control"]
    # A kernel outside the shared search, an unknown code, or a revoked link: 404.
    assert client.get(reverse("shared_kernel", args=[token, other.code])).status_code == 404
    assert client.get(reverse("shared_kernel", args=[token, "00000000-0000-0000-0000-000000000000"])).status_code == 404
    services.share_link_revoke(link=ShareLink.objects.get(), user=world["alice"])
    assert client.get(best_url).status_code == 404


def test_leaderboard_and_compare_links_open_only_their_kernels(client, world):
    board = create_via_page(client, reverse("share_leaderboard", args=[world["problem"].code]))
    compare = create_via_page(client, reverse("share_compare"), {"a": world["seed"].code, "b": world["best"].code})
    elsewhere = d.kernel(problem=d.problem(name="Other"), name="other problem")
    broken = d.kernel(problem=world["problem"], search=world["search"], status="compile_error", name="broken")
    client.logout()
    board_token, compare_token = board.split("/")[2], compare.split("/")[2]
    html = client.get(board).content.decode()
    assert f'href="{reverse("shared_kernel", args=[board_token, world["best"].code])}"' in html
    assert client.get(reverse("shared_kernel", args=[board_token, world["best"].code])).status_code == 200
    for kernel in (elsewhere, broken):  # not on the board
        assert client.get(reverse("shared_kernel", args=[board_token, kernel.code])).status_code == 404
    html = client.get(compare).content.decode()
    assert f'href="{reverse("shared_kernel", args=[compare_token, world["seed"].code])}"' in html
    assert client.get(reverse("shared_kernel", args=[compare_token, world["best"].code])).status_code == 200
    assert client.get(reverse("shared_kernel", args=[compare_token, broken.code])).status_code == 404


def test_share_links_use_the_public_base_url_when_set(client, world, settings):
    path = create_via_page(client, reverse("share_search", args=[world["search"].code]))  # the request's host
    assert path.startswith("/s/")
    settings.KERNELLAB_BASE_URL = "https://kernels.example.org/"
    response = client.post(reverse("share_search", args=[world["search"].code]), {"label": ""})
    html = response.content.decode()
    assert re.search(r'value="https://kernels\.example\.org/s/[A-Za-z0-9_-]{43,}/"', html)
    assert "testserver" not in html and 'data-copy="#share-url"' in html and "js/copy" in html
