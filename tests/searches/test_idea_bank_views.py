"""The Ideas page: its numbers equal a recomputation from the database, written here from the rows
(not through the selectors), for the searches the viewer may see; its filters and its cells' kernels."""

import re
from statistics import median

import pytest
from django.urls import reverse

from searches.models import BenchmarkRun, Idea, Kernel, ProposerCall
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def tag(idea, technique, *, call=None, expected=None):
    Idea.objects.filter(pk=idea.pk).update(technique=technique, call=call, expected_speedup=expected, origin="llm")


def paid(search, cost, model="claude-opus-4-6", purpose="kernel"):
    return ProposerCall.objects.create(search=search, purpose=purpose, proposer="anthropic", model=model, cost_usd=cost)


@pytest.fixture
def history(client):
    alice, bob = d.user("alice"), d.user("bob")
    client.force_login(alice)
    soft = d.problem(name="Softmax", family="softmax", min_bytes=1e3, device="cuda")
    mat = d.problem(name="Matmul", family="matmul", min_bytes=1e3, device="cuda")
    s1 = d.search(problem=soft, created_by=alice, device="cuda")
    seed = d.kernel(problem=soft, search=s1, round=0, origin="seed", median_ms=1.0)
    ideas_call = paid(s1, 0.30, purpose="ideas")
    a, b, c = (d.idea(search=s1, parent_kernel=seed, title=t) for t in ("Tiles", "Shuffles", "Tiles again"))
    tag(a, "tiling", call=ideas_call, expected=2.5)
    tag(b, "warp-reductions", call=ideas_call, expected=1.5)
    tag(c, "tiling", call=ideas_call)
    d.kernel(problem=soft, search=s1, idea=a, parent=seed, median_ms=0.5, call=paid(s1, 0.10))
    d.kernel(problem=soft, search=s1, idea=a, parent=seed, status="incorrect", reason="wrong", call=paid(s1, 0.05))
    d.kernel(problem=soft, search=s1, idea=b, parent=seed, median_ms=0.2, quarantined=True, call=paid(s1, 0.10))
    d.kernel(problem=soft, search=s1, idea=b, parent=seed, status="compile_error", reason="no", call=paid(s1, 0.02))
    reran = d.kernel(problem=soft, search=s1, idea=c, parent=seed, median_ms=0.8, call=paid(s1, 0.04))
    BenchmarkRun.objects.create(kernel=reran, purpose="rerun", status="correct", median_ms=1.2)  # not reproduced
    verified = d.kernel(problem=soft, search=s1, idea=c, parent=seed, median_ms=0.9, verified=True)
    BenchmarkRun.objects.create(kernel=verified, purpose="rerun", status="correct", median_ms=0.9)
    # Another GPU, another model.
    s2 = d.search(problem=soft, created_by=bob, device="cuda")
    seed2 = d.kernel(problem=soft, search=s2, round=0, origin="seed", median_ms=2.0, device_name="NVIDIA H100")
    e = d.idea(search=s2, parent_kernel=seed2, title="Fuse")
    tag(e, "fusion", call=paid(s2, 0.2, model="claude-sonnet-4-6", purpose="ideas"), expected=1.2)
    d.kernel(problem=soft, search=s2, idea=e, parent=seed2, median_ms=1.6, device_name="NVIDIA H100")
    # Bob's private search: not alice's to see.
    s3 = d.search(problem=mat, created_by=bob, private=True, device="cuda")
    seed3 = d.kernel(problem=mat, search=s3, round=0, origin="seed", median_ms=1.0)
    hidden = d.idea(search=s3, parent_kernel=seed3, title="Secret tiles")
    tag(hidden, "tiling")
    d.kernel(problem=mat, search=s3, idea=hidden, parent=seed3, median_ms=0.1)
    return {"alice": alice, "bob": bob, "hidden": hidden}


def recomputed(user, device=""):
    """{(technique, family): (successes, attempts, median gain, best gain, cost)} straight from the rows."""
    cells = {}
    for idea in Idea.objects.filter(origin="llm").select_related("search__problem", "parent_kernel", "call"):
        if idea.search.private and idea.search.created_by_id != user.id:
            continue
        kernels = list(Kernel.objects.filter(idea=idea))
        if not kernels or (device and idea.parent_kernel.device_name != device):
            continue
        gains = []
        for k in kernels:
            rerun = BenchmarkRun.objects.filter(kernel=k, purpose="rerun").exists()
            if k.status == "correct" and not k.quarantined and (k.verified or not rerun):
                gains.append(idea.parent_kernel.median_ms / k.median_ms)
        shared = Idea.objects.filter(call=idea.call).count() if idea.call_id else 1
        cost = (idea.call.cost_usd / shared if idea.call_id else 0) + sum(k.call.cost_usd for k in kernels if k.call_id)
        cell = cells.setdefault((idea.technique, idea.search.problem.family), [0, 0, [], 0.0])
        cell[0] += bool(gains) and max(gains) > 1
        cell[1] += 1
        cell[2] += [max(gains)] if gains else []
        cell[3] += cost
    return {key: (s, n, median(g) if g else None, max(g) if g else None, round(cost, 4))
            for key, (s, n, g, cost) in cells.items()}


def shown(html):
    """{(technique, family): (successes, attempts, median, best, cost)} as the page prints them."""
    cells = {}
    for technique, family, body in re.findall(
            r'<td class="cell" data-technique="([^"]+)" data-family="([^"]+)">(.*?)</td>', html, re.S):
        if "attempts" not in body:
            continue
        wins, tries = re.search(r'class="attempts">(\d+)/(\d+)<', body).groups()
        gain = [None if g == "—" else float(g.rstrip("x"))
                for g in re.findall(r'class="(?:median|best)">([^<]+)<', body)]
        cost = float(re.search(r'class="cost">\$([\d.]+)<', body).group(1))
        cells[(technique, family)] = (int(wins), int(tries), *gain, cost)
    return cells


def rounded(cells):
    return {k: (s, n, m if m is None else round(m, 2), b if b is None else round(b, 2), c)
            for k, (s, n, m, b, c) in cells.items()}


def test_the_page_equals_a_recomputation_for_the_viewer(client, history):
    page = client.get(reverse("idea_bank"))
    assert page.status_code == 200
    html = page.content.decode()
    assert rounded(shown(html)) == rounded(recomputed(history["alice"]))
    # "Tiles again": its kernel whose rerun did not reproduce does not count, the verified one (1.11x) does.
    assert shown(html)[("tiling", "softmax")][:3] == (2, 2, round((2.0 + 1 / 0.9) / 2, 2))
    assert shown(html)[("warp-reductions", "softmax")][:3] == (0, 1, None)  # quarantined: no gain
    assert "Secret tiles" not in html and ("tiling", "matmul") not in shown(html)
    client.force_login(history["bob"])
    bob = client.get(reverse("idea_bank")).content.decode()
    assert rounded(shown(bob)) == rounded(recomputed(history["bob"])) and ("tiling", "matmul") in shown(bob)


def test_filters_and_the_kernels_behind_a_cell(client, history):
    html = client.get(reverse("idea_bank"), {"device": "NVIDIA H100"}).content.decode()
    assert rounded(shown(html)) == rounded(recomputed(history["alice"], device="NVIDIA H100"))
    assert set(shown(html)) == {("fusion", "softmax")}
    html = client.get(reverse("idea_bank"), {"model": "claude-sonnet-4-6"}).content.decode()
    assert set(shown(html)) == {("fusion", "softmax")}
    cell = client.get(reverse("idea_bank_kernels"), {"technique": "tiling", "family": "softmax"}).content.decode()
    titles = re.findall(r"<td>(Tiles(?: again)?)</td>", cell)
    assert sorted(titles) == ["Tiles", "Tiles", "Tiles again", "Tiles again"]
    assert "Secret tiles" not in client.get(reverse("idea_bank_kernels"),
                                            {"technique": "tiling", "family": "matmul"}).content.decode()


def test_calibration_per_model(client, history):
    html = client.get(reverse("idea_bank")).content.decode()
    table = html.split('id="calibration"')[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>([^<]+)</td><td class=\"num\">(\d+)</td><td class=\"num\">([\d.]+)x</td>"
                      r"<td class=\"num\">([\d.]+)x</td><td class=\"num\">([\d.]+)</td></tr>", table)
    # Opus: only "Tiles" has a prediction (2.5x) and a trusted kernel (2x); Sonnet: "Fuse", 1.2x for 1.25x.
    assert rows == [("claude-opus-4-6", "1", "2.50", "2.00", "0.80"), ("claude-sonnet-4-6", "1", "1.20", "1.25", "1.04")]


def test_the_page_needs_a_login(client):
    assert client.get(reverse("idea_bank")).status_code == 302


def test_points_per_dollar_counts_each_call_once_and_every_call():
    from searches.selectors.ideas import points_per_dollar

    s = d.search(problem=d.problem(name="Stop", family="softmax"))
    seed = d.kernel(problem=s.problem, search=s, round=0, origin="seed", median_ms=1.0)
    for round_number, ms in ((1, 0.8), (2, 0.5)):
        call = paid(s, 0.25, purpose="ideas")  # two ideas of one call, and two calls of equal cost
        for n in range(2):
            idea = d.idea(search=s, parent_kernel=seed, title=f"r{round_number} {n}", round=round_number)
            tag(idea, "tiling", call=call)
            d.kernel(problem=s.problem, search=s, idea=idea, parent=seed, round=round_number, median_ms=ms,
                     call=paid(s, 0.125))
    # 100 points (1.0 ms -> 0.5 ms) for $0.25 x 2 ideas calls + $0.125 x 4 kernels = $1.
    assert points_per_dollar(s, 2, 2) == pytest.approx(100.0)
    assert points_per_dollar(s, 2, 1) == pytest.approx((0.8 / 0.5 - 1) * 100 / 0.5)
