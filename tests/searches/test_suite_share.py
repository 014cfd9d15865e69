"""Suite share links: the suite's scores read-only without a login, its kernels and exports through
the token and nothing else, revocable like every other kind."""

import csv
import html as html_lib
import io
import json
import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from evaluation.models import EvaluationJob
from searches import services
from searches.models import Kernel, Search, ShareLink, Suite, SuiteProblem
from tests.searches import dashboard_data as d

from .problem_samples import SOFTMAX

pytestmark = pytest.mark.django_db

H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"


def problem(name):
    return services.problem_create(user=None, name=name, source=f"# {name}\n" + SOFTMAX, validate=False)


def kernel(p, name, status="correct", eager=None, compile=None, device=H200, **extra):
    return Kernel.objects.create(problem=p, name=name, status=status, speedup_vs_eager=eager,
                                 speedup_vs_compile=compile, device_name=device, **extra)


def suite_of(name, problems):
    suite = Suite.objects.create(name=name)
    for number, p in enumerate(problems, start=1):
        SuiteProblem.objects.create(suite=suite, problem=p, level=1, number=number)
    return suite


@pytest.fixture
def world(client):
    alice = d.user("alice")
    client.force_login(alice)
    p1, p2, p3, p4 = problem("Matmul"), problem("Softmax"), problem("Conv"), problem("=HYPERLINK(1)")
    a = suite_of("KB level 1", [p1, p2, p3, p4])
    best = kernel(p1, "tiled matmul", eager=3.0, compile=2.0)
    slower = kernel(p1, "naive matmul", eager=1.2, compile=0.9)
    cheat = kernel(p2, "cached softmax", status="rejected", eager=50.0, compile=40.0,
                   reason="wrote the output during warm-up")
    kernel(p3, "noisy conv", eager=9.0, compile=7.0, quarantined=True)
    on_h100 = kernel(p1, "h100 matmul", eager=4.0, compile=3.0, device=H100)
    other = problem("Other problem")
    b = suite_of("KB level 2", [other])
    b_best = kernel(other, "level two best", eager=5.0, compile=4.0)
    loose = kernel(problem("Not in a suite"), "loose kernel", eager=8.0)
    return {"alice": alice, "a": a, "b": b, "best": best, "slower": slower, "cheat": cheat, "on_h100": on_h100,
            "b_best": b_best, "loose": loose, "p1": p1}


def share_suite(client, suite, label="for the workshop"):
    response = client.post(reverse("share_suite", args=[suite.code]), {"label": label})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    page = response.content.decode()
    assert 'id="copy-share-url"' in page and "read-only copy of the suite" in page
    path = re.search(r'value="http://testserver(/s/[^"]+/)"', page).group(1)
    return path, path.split("/")[2]


def scores_text(page: str) -> str:
    """The suite's scores as a reader sees them: the live part of the page, tags and spacing dropped."""
    live = re.search(r'<div id="suite-live".*?>(.*)</div>', page, re.S).group(1)
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", live)).split())


def test_create_open_logged_out_export_then_revoke(client, world):
    suite = world["a"]
    path, token = share_suite(client, suite)
    owner_page = client.get(reverse("suite_detail", args=[suite.code])).content.decode()
    owner_json = json.loads(client.get(reverse("suite_json", args=[suite.code])).content)
    owner_csv = client.get(reverse("suite_csv", args=[suite.code])).content.decode()
    client.logout()

    response = client.get(path)
    page = response.content.decode()
    assert response.status_code == 200 and "Read-only shared suite · for the workshop" in page
    assert scores_text(page) == scores_text(owner_page)  # the same numbers, verdicts and names as the owner's
    text = scores_text(page)
    # Per GPU model: on the H200, P1 is the one win (3x eager, 2x compile) of 4; the cheat and the noisy run are not.
    assert H200 in text and H100 in text
    assert "fast_1 25% (1/4) 25% (1/4)" in text and "fast_2 25% (1/4) 0% (0/4)" in text
    assert "geomean speedup (correct problems) 3.00× 2.00×" in text
    assert ("Correct 1 · quarantined 1 · cheats caught 1 · uses PyTorch (allowed in library mode) 0 · incorrect 0 · "
            "errors 0 · no result 1") in text
    assert "cached softmax on Softmax: wrote the output during warm-up" in text
    # Read-only: no form, and every link stays inside the share (or is the site's front page and its assets).
    assert 'method="post"' not in page and "csrfmiddlewaretoken" not in page
    hrefs = set(re.findall(r'href="([^"]*)"', page)) | set(re.findall(r'data-url="([^"]*)"', page))
    assert {h for h in hrefs if not (h == "/" or h.startswith("/static/") or h.startswith(path))} == set()
    assert f'href="{reverse("shared_kernel", args=[token, world["best"].code])}"' in page
    assert f'href="{reverse("shared_kernel", args=[token, world["cheat"].code])}"' in page
    assert f'data-url="{path}?fragment=1"' in page
    assert response["Referrer-Policy"] == "no-referrer" and "noindex" in response["X-Robots-Tag"]
    assert "no-store" in response["Cache-Control"]

    # The exports through the token are the owner's, byte for byte in what they say.
    exported = client.get(reverse("shared_suite_json", args=[token]))
    assert exported.status_code == 200 and exported["Referrer-Policy"] == "no-referrer"
    assert json.loads(exported.content) == owner_json
    assert owner_json["scores"][1]["fast_p"]["eager"]["fast_1"] == {"count": 1, "fraction": 0.25}
    shared_csv = client.get(reverse("shared_suite_csv", args=[token])).content.decode()
    assert shared_csv == owner_csv
    rows = list(csv.DictReader(io.StringIO(shared_csv)))
    assert [(r["device_name"], r["number"], r["outcome"]) for r in rows if r["device_name"] == H200] == [
        (H200, "1", "correct"), (H200, "2", "rejected"), (H200, "3", "quarantined"), (H200, "4", "none")]
    assert {r["problem"] for r in rows if r["number"] == "4"} == {"'=HYPERLINK(1)"}  # never a spreadsheet formula

    kernel_page = client.get(reverse("shared_kernel", args=[token, world["best"].code]))
    assert kernel_page.status_code == 200 and "tiled matmul" in kernel_page.content.decode()

    client.force_login(world["alice"])
    client.post(reverse("share_revoke", args=[ShareLink.objects.get().pk]))
    client.logout()
    for url in (path, path + "?fragment=1", reverse("shared_suite_json", args=[token]),
                reverse("shared_suite_csv", args=[token]), reverse("shared_kernel", args=[token, world["best"].code])):
        assert client.get(url).status_code == 404, url


def test_the_live_part_refreshes_through_the_token(client, world):
    path, token = share_suite(client, world["a"])
    kernel(world["p1"], "still running", status="evaluating", device="")  # work in progress: the page polls
    client.logout()
    page = client.get(path).content.decode()
    assert 'data-busy="true"' in page and 'id="suite-progress"' in page
    fragment = client.get(path + "?fragment=1")
    body = fragment.content.decode()
    assert fragment.status_code == 200 and "<html" not in body and 'id="suite-progress"' in body
    assert f'href="{reverse("shared_kernel", args=[token, world["best"].code])}"' in body
    assert f'"{reverse("kernel_detail", args=[world["best"].code])}' not in body
    assert fragment["Referrer-Policy"] == "no-referrer" and "no-store" in fragment["Cache-Control"]


def test_a_suite_token_opens_only_what_its_suite_page_lists(client, world):
    path, token = share_suite(client, world["a"])
    _, kernel_token = services.share_link_create(user=world["alice"], kind="kernel", kernel=world["best"])
    client.logout()
    page = client.get(path).content.decode()
    assert "KB level 2" not in page and "level two best" not in page and "loose kernel" not in page

    def opens(code):
        return client.get(reverse("shared_kernel", args=[token, code])).status_code

    # Listed: each problem's best on each GPU model, and the cheats caught.
    assert [opens(k.code) for k in (world["best"], world["on_h100"], world["cheat"])] == [200, 200, 200]
    # Not listed: a slower kernel of a listed problem, suite B's best, a kernel of no suite.
    assert [opens(k.code) for k in (world["slower"], world["b_best"], world["loose"])] == [404, 404, 404]
    # A kernel link's token opens no suite export; a suite token opens no logged-in page.
    assert client.get(reverse("shared_suite_json", args=[kernel_token])).status_code == 404
    assert client.get(reverse("shared_suite_csv", args=[kernel_token])).status_code == 404
    for name, code in (("suite_detail", world["a"].code), ("suite_json", world["a"].code),
                       ("suite_detail", world["b"].code), ("problem_detail", world["p1"].code),
                       ("kernel_detail", world["best"].code)):
        response = client.get(reverse(name, args=[code]) + f"?token={token}")
        assert response.status_code == 302 and response["Location"].startswith("/login/"), name


def test_no_mutation_endpoint_accepts_the_token(client, world):
    path, token = share_suite(client, world["a"])
    link = ShareLink.objects.get()
    client.logout()
    before = (ShareLink.objects.count(), EvaluationJob.objects.count(), Search.objects.count(), Suite.objects.count())
    code = world["a"].code
    for url in (reverse("share_suite", args=[code]), reverse("suite_validate", args=[code]),
                reverse("suite_search", args=[code]), reverse("suite_import"), reverse("share_revoke", args=[link.pk])):
        response = client.post(url, {"token": token, "label": "x", "name": "KB level 1"}, HTTP_REFERER=path)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url
    for url in (path, reverse("shared_suite_json", args=[token]), reverse("shared_suite_csv", args=[token]),
                reverse("shared_kernel", args=[token, world["best"].code])):
        assert client.post(url, {"label": "x"}).status_code == 405, url
    after = (ShareLink.objects.count(), EvaluationJob.objects.count(), Search.objects.count(), Suite.objects.count())
    assert after == before
    link.refresh_from_db()
    assert link.revoked_at is None and client.get(path).status_code == 200


def test_the_suite_page_lists_its_links_and_who_may_revoke_them(client, world):
    share_suite(client, world["a"], label="for the workshop")
    share_suite(client, world["b"], label="for suite B only")
    page = client.get(reverse("suite_detail", args=[world["a"].code])).content.decode()
    assert 'id="share-links"' in page and f'action="{reverse("share_suite", args=[world["a"].code])}"' in page
    assert "for the workshop" in page and "for suite B only" not in page and "active" in page
    link = ShareLink.objects.get(suite=world["a"])
    assert link.kind == ShareLink.Kind.SUITE and link.created_by == world["alice"]
    with pytest.raises(PermissionDenied):
        services.share_link_revoke(link=link, user=d.user("bob"))
    response = client.post(reverse("share_revoke", args=[link.pk]), {"next": "https://evil.example/"})
    assert response["Location"] == reverse("suite_detail", args=[world["a"].code])  # back to the suite, no open redirect
    page = client.get(reverse("suite_detail", args=[world["a"].code])).content.decode()
    assert re.search(r"for the workshop.*?revoked", page, re.S)


def test_a_suite_link_needs_exactly_a_suite(world):
    alice = world["alice"]
    with pytest.raises(ValidationError, match="needs exactly: suite"):
        services.share_link_create(user=alice, kind="suite")
    with pytest.raises(ValidationError, match="needs exactly: suite"):
        services.share_link_create(user=alice, kind="suite", suite=world["a"], kernel=world["best"])
    with pytest.raises(ValidationError, match="needs exactly: kernel"):
        services.share_link_create(user=alice, kind="kernel", kernel=world["best"], suite=world["a"])
    link, _ = services.share_link_create(user=alice, kind="suite", suite=world["a"], label="  trimmed ")
    assert (link.suite, link.label, link.device_name) == (world["a"], "trimmed", "")
