"""One definition of "best" (searches/selectors/speedups.py): the same kernel and ratio, with the
baseline time it used, on the tree, the Searches list, the leaderboard, its export and the suite."""

import itertools

import pytest
from django.urls import reverse

from searches import selectors
from searches.models import BenchmarkRun, Kernel
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def paired(kernel, speedup, eager_ms, *, dropped=""):
    """The kernel's run as the CPU runner reports it: eager timed in blocks beside the kernel's."""
    Kernel.objects.filter(pk=kernel.pk).update(speedup_vs_eager=speedup)
    BenchmarkRun.objects.filter(kernel=kernel).update(
        speedup_vs_eager=speedup, result={"status": "correct", "paired": {"eager_ms": eager_ms, "speedup": speedup,
                                                                           "dropped": dropped, "blocks": 8}})


@pytest.fixture
def layernorm_cpu(client):
    """Issue 36's LayerNorm-CPU: the faster median was timed on a quiet host and loses to eager beside
    it; the slower median, timed under load, beats the eager timed beside it."""
    alice = d.user()
    client.force_login(alice)
    p = d.problem(name="LayerNorm", device="cpu")
    s = d.search(problem=p, created_by=alice, device="cpu")
    quiet = d.kernel(problem=p, search=s, median_ms=0.0506, name="quiet", device_name="cpu")
    loaded = d.kernel(problem=p, search=s, median_ms=0.21, name="loaded", device_name="cpu")
    paired(quiet, 0.83, 0.0420)
    paired(loaded, 1.15, 0.2415)
    return {"problem": p, "search": s, "quiet": quiet, "loaded": loaded}


def test_on_the_cpu_best_is_the_highest_paired_speedup_everywhere(client, layernorm_cpu):
    search, problem = layernorm_cpu["search"], layernorm_cpu["problem"]
    tree = selectors.search_tree(search=search)
    assert tree["best"]["id"] == layernorm_cpu["loaded"].id and tree["best"]["eager_ms"] == 0.2415

    page = client.get(reverse("search_detail", args=[search.code])).content.decode()
    best_line = page.split('id="best-line"')[1].split("</p>")[0]
    assert "0.2100 ms" in best_line and "1.15× paired eager" in best_line and "(paired eager 0.2415 ms)" in best_line

    listing = client.get(reverse("search_list")).content.decode()
    cell = listing.split('<td class="num best-speedup">')[1].split("</td>")[0]
    assert "1.15× paired eager" in cell and "(0.2100 vs 0.2415 ms)" in cell

    board = client.get(reverse("leaderboard", args=[problem.code])).content.decode()
    assert board.index(">loaded<") < board.index(">quiet<")
    assert "1.15× paired eager" in board and "0.83× paired eager" in board

    entries = client.get(reverse("leaderboard_json", args=[problem.code])).json()["entries"]
    assert [(e["name"], e["speedup_vs_eager"], e["baseline"], e["baseline_eager_ms"]) for e in entries][0] == (
        "loaded", 1.15, "paired eager", 0.2415)


def test_a_dropped_pairing_says_its_ratio_used_the_validation_eager(layernorm_cpu):
    paired(layernorm_cpu["quiet"], 0.83, 0.0420, dropped="the host was busy")
    times = selectors.baseline_times([layernorm_cpu["quiet"].id])
    assert times[layernorm_cpu["quiet"].id] == {"eager_ms": 1.0, "baseline": "eager"}


def test_on_the_gpu_best_is_the_fastest_median_and_its_own_ratios(client):
    alice = d.user()
    client.force_login(alice)
    p = d.problem(device="cuda")
    s = d.search(problem=p, created_by=alice, device="cuda")
    fast = d.kernel(problem=p, search=s, median_ms=0.25, name="fast")
    slow = d.kernel(problem=p, search=s, median_ms=0.5, name="slow")
    Kernel.objects.filter(pk=slow.pk).update(speedup_vs_eager=9.0)  # against an older, slower baseline
    assert selectors.search_tree(search=s)["best"]["id"] == fast.id
    listing = client.get(reverse("search_list")).content.decode()
    assert "4.00× eager" in listing.split('<td class="num best-speedup">')[1].split("</td>")[0]
    entries = client.get(reverse("leaderboard_json", args=[p.code])).json()["entries"]
    assert entries[0]["name"] == "fast" and entries[0]["baseline"] == "eager"


@pytest.mark.django_db
def test_the_ranked_filter_and_the_row_test_agree_on_every_combination():
    """`Kernel.objects.ranked()` (the database's filter) and `kernel_is_ranked` (the tree's test on rows)
    are one definition: they pick the same kernels among every status/time/quarantine/review mix."""
    from searches.selectors.kernels import kernel_is_ranked

    reviewer = d.user("reviewer")
    search = d.search(problem=d.problem())
    for status, median, quarantined, verified, approved in itertools.product(
            ["correct", "incorrect"], [1.0, None], [False, True], [False, True], [None, reviewer]):
        Kernel.objects.create(problem=search.problem, search=search, source="x", status=status, median_ms=median,
                              quarantined=quarantined, verified=verified, approved_by=approved)
    by_rows = {k.id for k in Kernel.objects.filter(search=search) if kernel_is_ranked(k)}
    assert by_rows and by_rows == set(Kernel.objects.filter(search=search).ranked().values_list("id", flat=True))
