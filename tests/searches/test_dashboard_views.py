"""The dashboard's pages and exports, on rows made through the models."""

import csv
import io
import json
import re
import zipfile

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from evaluation.models import EvaluationJob
from lib.security import POLICY
from searches.models import Search
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(client):
    user = d.user()
    client.force_login(user)
    return user


@pytest.fixture
def tree(alice):
    """seed -> idea A -> (fast correct, compile error, quarantined) ; fast -> idea B -> (faster correct, timeout)"""
    p = d.problem()
    s = d.search(problem=p, created_by=alice, rounds=3)
    seed = d.kernel(problem=p, search=s, round=0, origin="seed", median_ms=1.0, name="seed kernel")
    idea_a = d.idea(search=s, parent_kernel=seed, title="Vectorise loads", round=1)
    fast = d.kernel(problem=p, search=s, idea=idea_a, parent=seed, round=1, median_ms=0.5, name="fast",
                    call=d.call(search=s, prompt="PROMPT-TEXT", reply="REPLY-TEXT"))
    broken = d.kernel(problem=p, search=s, idea=idea_a, parent=seed, round=1, status="compile_error", name="broken")
    cheat = d.kernel(problem=p, search=s, idea=idea_a, parent=seed, round=1, median_ms=0.001, quarantined=True,
                     name="too fast")
    idea_b = d.idea(search=s, parent_kernel=fast, title="Fuse the epilogue", round=2)
    faster = d.kernel(problem=p, search=s, idea=idea_b, parent=fast, round=2, median_ms=0.25, name="faster")
    slow = d.kernel(problem=p, search=s, idea=idea_b, parent=fast, round=2, status="timeout", name="slowpoke")
    return {"problem": p, "search": s, "seed": seed, "fast": fast, "broken": broken, "cheat": cheat,
            "faster": faster, "slow": slow, "idea_a": idea_a, "idea_b": idea_b}


def test_every_page_needs_a_login(client, tree):
    k = tree["fast"]
    urls = [reverse("search_list"), reverse("search_detail", args=[tree["search"].code]),
            reverse("kernel_detail", args=[k.code]), reverse("kernel_export", args=[k.code]),
            reverse("kernel_bundle", args=[k.code]), reverse("compare") + f"?a={k.code}&b={tree['seed'].code}",
            reverse("leaderboard", args=[tree["problem"].code]), reverse("leaderboard_json", args=[tree["problem"].code]),
            reverse("leaderboard_csv", args=[tree["problem"].code]), reverse("leaderboard_index"),
            reverse("search_new", args=[tree["problem"].code]),
            reverse("search_insights", args=[tree["search"].code])]
    client.logout()
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url


def test_search_page_shows_the_tree_with_marks_and_the_best_path(client, tree):
    response = client.get(reverse("search_detail", args=[tree["search"].code]))
    html = response.content.decode()
    assert response["Content-Security-Policy"] == POLICY
    for name in ("seed kernel", "fast", "broken", "too fast", "faster", "slowpoke", "Vectorise loads",
                 "Fuse the epilogue"):
        assert name in html
    assert 'class="k s-compile_error"' in html and 'class="k s-timeout"' in html
    assert f'id="k-{tree["cheat"].id}"' in html and "⚠ quarantined" in html
    # The best ranked kernel is "faster" (the quarantined one is outside the ranking): path seed -> A -> fast -> B -> faster.
    for node in ("seed", "fast", "faster"):
        assert f'class="k s-correct best" id="k-{tree[node].id}"' in html
    assert f'class="i best" id="i-{tree["idea_a"].id}"' in html
    assert f'class="k s-correct q" id="k-{tree["cheat"].id}"' in html  # not on the path
    # Nesting: the idea's node sits inside its parent kernel's node.
    assert html.index(f'id="k-{tree["seed"].id}"') < html.index(f'id="i-{tree["idea_a"].id}"') < html.index(
        f'id="k-{tree["fast"].id}"')
    assert 'id="live-config"' in html and "<script" in html and "<script>" not in html  # no inline script


def node_tag(html: str, kind: str, pk: int) -> str:
    return re.search(rf'<li [^>]*id="{kind}-{pk}"[^>]*>', html).group(0)


def test_search_page_filter_keeps_ancestors_of_matches(client, tree):
    url = reverse("search_detail", args=[tree["search"].code])
    html = client.get(url, {"status": "timeout"}).content.decode()
    assert not node_tag(html, "k", tree["slow"].id).endswith(" hidden>")  # the match
    for ancestor in ("seed", "fast"):
        assert not node_tag(html, "k", tree[ancestor].id).endswith(" hidden>")
    assert not node_tag(html, "i", tree["idea_b"].id).endswith(" hidden>")
    for other in ("broken", "cheat", "faster"):
        assert node_tag(html, "k", tree[other].id).endswith(" hidden>")
    assert node_tag(html, "i", tree["idea_a"].id).endswith(">") and "hidden" not in node_tag(html, "i", tree["idea_a"].id)
    html = client.get(url, {"round": "1", "status": "compile_error"}).content.decode()
    assert not node_tag(html, "k", tree["broken"].id).endswith(" hidden>")
    assert node_tag(html, "i", tree["idea_b"].id).endswith(" hidden>")


def test_search_progress_chart_and_idea_stats(client, tree):
    s = tree["search"]
    Search.objects.filter(pk=s.pk).update(candidates_evaluated=6, max_candidates=12, tokens_in=1000, tokens_out=234,
                                          cost_usd=0.5, current_round=2)
    html = client.get(reverse("search_detail", args=[s.code])).content.decode()
    assert 'id="progress-bar" max="12" value="6"' in html
    assert ">1234</span> tokens" in html and "0.5000" in html
    assert '<svg class="chart"' in html and "polyline" in html
    # Idea A: 2 of 3 evaluated kernels correct (the quarantined one is correct too).
    assert "Vectorise loads</td><td class=\"num\">1</td><td class=\"num\">2/3</td>" in html


def test_insights_fragment_follows_new_verdicts(client, tree):
    url = reverse("search_insights", args=[tree["search"].code])
    before = client.get(url)
    html = before.content.decode()
    assert before["Cache-Control"] == "no-store" and "<html" not in html  # the fragment alone
    assert 'id="chart-card"' in html and "Fuse the epilogue" in html and "1/2" in html  # idea B: faster ok, slowpoke not
    idea_c = d.idea(search=tree["search"], parent_kernel=tree["faster"], title="Split the reduction", round=3,
                    publish=True)  # a change publishes its event, which is what refreshes the cached charts
    d.kernel(problem=tree["problem"], search=tree["search"], idea=idea_c, parent=tree["faster"], round=3,
             median_ms=0.1, name="fastest", publish=True)
    html = client.get(url).content.decode()
    assert "Split the reduction" in html and ">R3</text>" in html and "10.00" in html  # 1 / 0.1 ms vs eager


def test_every_response_carries_the_content_security_policy(client, tree):
    urls = [reverse("home"), reverse("problem_list"), reverse("problem_detail", args=[tree["problem"].code]),
            reverse("problem_create"), reverse("search_insights", args=[tree["search"].code]), "/admin/"]
    for url in urls:
        assert client.get(url)["Content-Security-Policy"] == POLICY, url
    client.logout()
    assert client.get(reverse("login"))["Content-Security-Policy"] == POLICY


def test_speed_of_light_on_nodes_kernel_page_leaderboard_and_events(client, tree):
    from searches import selectors
    from searches.engine import context

    problem = tree["problem"]
    problem.min_bytes = 0.25e-3 * 4.25e12  # 0.25 ms of H200 bandwidth: "fast" (0.5 ms) is at 50%
    problem.save(update_fields=["min_bytes"])
    html = client.get(reverse("search_detail", args=[tree["search"].code])).content.decode()
    assert "0.5 ms · 2.00× eager · 1.60× compile · 50% SOL" in html and "25% SOL" in html  # fast, seed
    page = client.get(reverse("kernel_detail", args=[tree["fast"].code])).content.decode()
    assert "50%\n        · floor 0.25 ms, memory-bound: 1.06 GB at 4.25 TB/s on the H200" in page
    board = client.get(reverse("leaderboard", args=[problem.code])).content.decode()
    assert 'title="floor 0.25 ms: 1.06 GB at 4.25 TB/s">50%</td>' in board
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(
        client.get(reverse("leaderboard_csv", args=[problem.code])).content.decode()))}
    assert float(rows["faster"]["speed_of_light"]) == pytest.approx(1.0)
    assert selectors.kernel_view(tree["fast"])["speed_of_light"] == pytest.approx(0.5)  # the live events' payload
    compare = client.get(reverse("compare"), {"a": tree["fast"].code, "b": tree["faster"].code}).content.decode()
    assert 'title="floor 0.25 ms: 1.06 GB at 4.25 TB/s on the H200">50%</dd>' in compare and ">100%</dd>" in compare
    assert context.kernel_context(tree["fast"]).speed_of_light == (  # what the proposer reads about a parent
        "50% of the speed of light on the H200 (floor 0.25 ms, memory-bound: 1.06 GB at 4.25 TB/s)")
    # Not on unknown GPUs, not for kernels that are not correct.
    assert selectors.speed_of_light(problem, tree["broken"]) is None
    tree["fast"].device_name = "Some Future GPU"
    tree["fast"].save(update_fields=["device_name"])
    assert selectors.speed_of_light(problem, tree["fast"]) is None
    assert "unknown for this device or problem" in client.get(reverse("kernel_detail", args=[tree["fast"].code])).content.decode()


def test_search_list_shows_progress_and_best_ranked_speedups(client, tree):
    Search.objects.filter(pk=tree["search"].pk).update(candidates_evaluated=6, max_candidates=12)
    html = client.get(reverse("search_list")).content.decode()
    assert '<progress class="list-progress" max="12" value="6"></progress>\n        6/12' in html
    # "faster" (4x eager, 3.2x compile) is the best ranked kernel; the quarantined 1000x one is not ranked.
    cell = html.split('<td class="num best-speedup">')[1].split("</td>")[0]
    assert "4.00× eager" in cell and "(0.2500 vs 1.0000 ms)" in cell and "1000.00" not in html
    assert '<td class="num">3.20</td>' in html


def test_kernel_page_sections(client, tree):
    k = tree["fast"]
    html = client.get(reverse("kernel_detail", args=[k.code])).content.decode()
    assert "Vectorise loads" in html
    assert 'class="highlight"' in html  # Pygments
    assert 'table class="diff split"' in html and "parent: seed kernel" in html
    assert "cc -O3 ok" in html and "randn" in html and "NVIDIA H200" in html and "580.65" in html
    assert "PROMPT-TEXT" in html and "REPLY-TEXT" in html
    assert 'class="chart timing"' in html
    assert 'id="btn-rerun"' in html and 'id="btn-approve"' not in html


def test_rerun_and_approve_buttons(client, tree, alice):
    cheat = tree["cheat"]
    response = client.post(reverse("kernel_approve", args=[cheat.code]), follow=True)
    assert "Request a verified rerun first" in response.content.decode()
    cheat.refresh_from_db()
    assert cheat.approved_by is None
    response = client.post(reverse("kernel_rerun", args=[cheat.code]), follow=True)
    assert EvaluationJob.objects.filter(kernel=cheat, purpose="rerun").count() == 1
    assert "Rerun queued" in response.content.decode()
    cheat.verified = True
    cheat.save()
    # alice started the search: a second person approves.
    page = client.get(reverse("kernel_detail", args=[cheat.code])).content.decode()
    assert 'id="btn-approve"' not in page
    response = client.post(reverse("kernel_approve", args=[cheat.code]), follow=True)
    assert "A second person approves a quarantined kernel" in response.content.decode()
    cheat.refresh_from_db()
    assert cheat.approved_by is None
    bob = d.user("bob")
    client.force_login(bob)
    assert 'id="btn-approve"' in client.get(reverse("kernel_detail", args=[cheat.code])).content.decode()
    client.post(reverse("kernel_approve", args=[cheat.code]))
    cheat.refresh_from_db()
    assert cheat.approved_by == bob
    # It is ranked now, and first: 0.001 ms.
    rows = json.loads(client.get(reverse("leaderboard_json", args=[tree["problem"].code])).content)["entries"]
    assert rows[0]["kernel"] == str(cheat.code) and rows[0]["rank"] == 1 and rows[0]["approved"]


def test_standalone_export_and_bundle(client, tree):
    k = tree["fast"]
    response = client.get(reverse("kernel_export", args=[k.code]))
    text = response.content.decode()
    assert response["Content-Disposition"].startswith("attachment")
    assert text.splitlines()[0].startswith(f"# KernelLab kernel {k.code}") and text.endswith(k.source)
    compile(text, "kernel.py", "exec")
    response = client.get(reverse("kernel_bundle", args=[k.code]))
    bundle = zipfile.ZipFile(io.BytesIO(response.content))
    assert set(bundle.namelist()) >= {"problem.py", "kernel.py", "README.md", "environment.json", "command.txt"}
    assert bundle.read("problem.py").decode() == tree["problem"].source
    assert bundle.read("kernel.py").decode() == k.source
    seed = k.runs.get().seed
    command = f"python -m runner evaluate problem.py kernel.py --device cpu --seed {seed} --json"
    assert command in bundle.read("README.md").decode()
    assert json.loads(bundle.read("environment.json"))["driver"] == "580.65"


def test_export_header_cannot_inject_code(client, tree):
    k = tree["fast"]
    k.name = "x\nimport os; os.system('boom')"
    k.save()
    text = client.get(reverse("kernel_export", args=[k.code])).content.decode()
    assert "\nimport os" not in text.split("\n\n")[0] + "\n"


def test_compare_two_kernels(client, tree):
    a, b = tree["seed"], tree["faster"]
    response = client.get(reverse("compare"), {"a": a.code, "b": b.code})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'table class="diff split"' in html and 'id="delta-ratio">4.000×' in html
    # The tree's checkboxes submit k=...&k=...
    response = client.get(reverse("compare") + f"?k={a.code}&k={b.code}")
    assert 'id="delta-ratio">4.000×' in response.content.decode()


def test_compare_refuses_bad_picks(client, tree):
    url = reverse("compare")
    assert client.get(url + f"?k={tree['seed'].code}").status_code == 400
    assert client.get(url, {"a": "nope", "b": tree["seed"].code}).status_code == 400
    assert client.get(url, {"a": "7b7c6f36-2d39-4a57-9e33-58a0e35c2b0a", "b": tree["seed"].code}).status_code == 404
    other = d.problem(name="Other", outputs=((8, 8), "float16"))
    foreign = d.kernel(problem=other)
    response = client.get(url, {"a": tree["seed"].code, "b": foreign.code})
    assert response.status_code == 400 and "different outputs" in response.content.decode()
    same_shape = d.problem(name="Same shape")
    across = d.kernel(problem=same_shape, median_ms=0.5)
    assert client.get(url, {"a": tree["seed"].code, "b": across.code}).status_code == 200


def test_leaderboard_ranks_per_device_and_keeps_quarantined_out(client, tree):
    p = tree["problem"]
    d.kernel(problem=p, median_ms=0.1, device_name="NVIDIA L40S", name="l40s kernel")
    html = client.get(reverse("leaderboard", args=[p.code])).content.decode()
    assert html.index('data-device="NVIDIA H200"') < html.index('data-device="NVIDIA L40S"')
    h200 = html.split('data-device="NVIDIA H200"')[1].split('data-device="NVIDIA L40S"')[0]
    ranking, quarantine = h200.split("Quarantined, not ranked")
    assert ranking.index("faster") < ranking.index(">fast<") < ranking.index("seed kernel")
    assert "too fast" not in ranking and "too fast" in quarantine
    rows = json.loads(client.get(reverse("leaderboard_json", args=[p.code]), {"device": "NVIDIA H200"}).content)
    assert [r["name"] for r in rows["entries"]] == ["faster", "fast", "seed kernel", "too fast"]
    assert [r["rank"] for r in rows["entries"]] == [1, 2, 3, None]
    assert all(r["device_name"] == "NVIDIA H200" for r in rows["entries"])


def test_leaderboard_csv_export(client, tree):
    p = tree["problem"]
    tree["fast"].name = "=HYPERLINK(\"http://evil\")"
    tree["fast"].save()
    response = client.get(reverse("leaderboard_csv", args=[p.code]))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 4
    assert rows[0]["name"] == "faster" and rows[0]["rank"] == "1" and rows[0]["ran_by"] == "alice"
    assert rows[1]["name"].startswith("'=")  # spreadsheet formulas defused


def test_start_search_form_shows_the_engine_errors(client, tree):
    p = tree["problem"]
    url = reverse("search_new", args=[p.code])
    form = {"proposer": "playbook", "device": "cpu", "rounds": 2, "parents_per_round": 1, "ideas_per_parent": 2,
            "kernels_per_idea": 1, "bank_size": 1}
    response = client.post(url, {**form, "rounds": 0})
    assert response.status_code == 200 and "rounds must be a whole number from 1 to 50." in response.content.decode()
    p.validation_status = "pending"
    p.save()
    html = client.post(url, form).content.decode()
    assert "still being validated" in html and 'id="form-errors"' in html
    p.validation_status = "ok"
    p.save()
    html = client.post(url, form).content.decode()  # no family: the playbook cannot serve it
    proposer_field = html.split('for="id_proposer"')[1].split('<div class="field')[0]
    assert "errorlist" in proposer_field and "needs an LLM" in proposer_field
    assert Search.objects.filter(problem=p).count() == 1


def test_start_search_creates_it_and_redirects(client, tree):
    p = tree["problem"]
    p.family = "softmax"  # one the built-in playbook writes CPU kernels for
    p.save()
    response = client.post(reverse("search_new", args=[p.code]), {
        "proposer": "playbook", "device": "cpu", "rounds": 2, "parents_per_round": 1, "ideas_per_parent": 2,
        "kernels_per_idea": 1, "bank_size": 1, "max_candidates": 5})
    assert response.status_code == 302, response.content.decode().split("errorlist")[1:2]
    search = Search.objects.exclude(pk=tree["search"].pk).get(problem=p)
    assert response["Location"] == reverse("search_detail", args=[search.code])
    assert search.max_candidates == 5 and search.rounds == 2


def test_pause_resume_cancel_buttons(client, tree):
    s = tree["search"]
    tree["problem"].family = "softmax"  # resuming re-checks that the playbook can serve the problem
    tree["problem"].save()
    client.post(reverse("search_pause", args=[s.code]))
    s.refresh_from_db()
    assert s.status == "paused"
    client.post(reverse("search_resume", args=[s.code]))
    s.refresh_from_db()
    assert s.status in Search.ACTIVE
    client.post(reverse("search_cancel", args=[s.code]))
    s.refresh_from_db()
    assert s.status == "cancelled"
    response = client.post(reverse("search_pause", args=[s.code]), follow=True)
    assert "Could not pause the search" in response.content.decode()
    assert client.get(reverse("search_pause", args=[s.code])).status_code == 405


def test_only_the_searchs_creator_or_an_administrator_steers_it(client, tree):
    from searches import services

    s = tree["search"]
    client.force_login(d.user("bob"))
    page = client.get(reverse("search_detail", args=[s.code])).content.decode()
    assert 'id="btn-pause"' not in page and 'id="add-idea"' not in page and 'id="steer-note"' in page
    response = client.post(reverse("search_pause", args=[s.code]), follow=True)
    assert "Only the person who started this search, or an administrator, can pause it." in response.content.decode()
    response = client.post(reverse("search_kernel_new", args=[s.code]), {"source": "class ModelNew: pass\n"})
    assert "can add kernels to it" in response.content.decode()
    with pytest.raises(PermissionDenied):
        services.idea_add(search=s, user=d.user("carol"), parent_kernel=tree["fast"], title="t", description="")
    s.refresh_from_db()
    assert s.status == "running" and not s.kernels.filter(origin="user").exists()
    # Anyone may fork it: the fork is theirs to steer.
    tree["problem"].family = "softmax"  # the playbook can serve the fork
    tree["problem"].save()
    client.post(reverse("search_fork", args=[s.code]))
    fork = Search.objects.get(forked_from=s)
    assert fork.created_by.username == "bob" and 'id="btn-pause"' in client.get(
        reverse("search_detail", args=[fork.code])).content.decode()
    # An administrator, and the system itself (user=None), may steer any search.
    services.search_pause(search=s, user=d.user("root", is_staff=True))
    services.search_cancel(search=s, user=None)
    s.refresh_from_db()
    assert s.status == "cancelled"


def test_add_idea_checks_the_parent_and_reaches_the_search(client, tree):
    s = tree["search"]
    url = reverse("idea_add", args=[s.code])
    response = client.post(url, {"parent_kernel": "7b7c6f36-2d39-4a57-9e33-58a0e35c2b0a", "title": "x"}, follow=True)
    assert "not part of this search" in response.content.decode()
    response = client.post(url, {"parent_kernel": tree["fast"].code, "title": "Use shared memory"}, follow=True)
    assert "playbook" in response.content.decode()  # the playbook only implements its own ideas: refused, with why
    Search.objects.filter(pk=s.pk).update(proposer="anthropic")
    response = client.post(url, {"parent_kernel": tree["fast"].code, "title": "Use shared memory",
                                 "description": "Stage tiles"}, follow=True)
    assert "Idea added" in response.content.decode()
    idea = s.ideas.get(title="Use shared memory")
    assert idea.origin == "user" and idea.parent_kernel == tree["fast"] and idea.description == "Stage tiles"
    assert s.events.filter(kind="idea.created", payload__id=idea.id).exists()


def test_fork_the_search_or_from_a_kernel(client, tree):
    s = tree["search"]
    tree["problem"].family = "softmax"
    tree["problem"].save()
    response = client.post(reverse("search_fork", args=[s.code]), {"from_kernel": tree["fast"].code})
    fork = Search.objects.get(forked_from=s)
    assert response["Location"] == reverse("search_detail", args=[fork.code])
    assert fork.forked_from_kernel == tree["fast"]
    response = client.post(reverse("search_fork", args=[s.code]), {"from_kernel": "not-a-code"}, follow=True)
    assert "that kernel does not exist" in response.content.decode()
    other = d.kernel(problem=tree["problem"], search=d.search(problem=tree["problem"]))
    response = client.post(reverse("search_fork", args=[s.code]), {"from_kernel": other.code}, follow=True)
    assert "does not belong to this search" in response.content.decode()


def test_submit_a_hand_written_kernel(client, tree):
    s = tree["search"]
    url = reverse("search_kernel_new", args=[s.code])
    response = client.post(url, {"source": "print('no model here')"})
    assert response.status_code == 200 and "must define" in response.content.decode()
    response = client.post(url, {"source": d.KERNEL_SOURCE.format(tag="mine"), "name": "by hand",
                                 "parent": tree["fast"].code})
    kernel = s.kernels.get(name="by hand")
    assert response["Location"] == reverse("kernel_detail", args=[kernel.code])
    assert kernel.origin == "user" and kernel.parent == tree["fast"]
    assert EvaluationJob.objects.filter(kernel=kernel).exists()
    response = client.post(reverse("problem_kernel_new", args=[tree["problem"].code]),
                           {"source": d.KERNEL_SOURCE.format(tag="loose"), "name": "no search"})
    assert response.status_code == 302
