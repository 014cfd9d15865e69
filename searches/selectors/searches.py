"""Reads on searches: the tree, progress, insights, lists, which proposer can run."""

import os
from collections import defaultdict

from django.db.models import OuterRef, Subquery

from live import events as live_events
from proposers.registry import capabilities, proposer_class
from searches.models import BenchmarkRun, Device, Idea, Kernel, Problem, Search, Verdict, ranked_q
from searches.task_queue import anthropic_key_seen

from .kernel_view import VIEW_FIELDS, kernel_view
from .kernels import kernel_is_ranked, provenance
from .speedups import best_order, pick_best, ranks_by_paired, with_baselines


def search_proposer_unavailable(*, problem: Problem, proposer: str, device: str) -> str:
    """Why `proposer` cannot run a search on `problem` for `device`, or "" when it can.
    The web server holds no key: a live task queue says in its heartbeat whether it has one. A
    process that runs the engine itself (`manage.py search`, sync mode) checks its own environment."""
    if proposer not in Search.Proposer.values:
        return f"Unknown proposer {proposer!r}: choose one of {', '.join(Search.Proposer.values)}."
    can = capabilities(proposer)
    # The task queue's heartbeat says whether it holds the one key a proposer needs today (task_queue.py).
    if can.api_key and not (os.environ.get(can.api_key) or anthropic_key_seen()):
        return (f"The Anthropic proposer needs an API key: set {can.api_key} in the environment of the task "
                "queue (qcluster) only, then restart it; the web server learns of the key from the task queue. "
                "Without a key, use the built-in playbook.")
    if not can.any_problem:
        family = problem.family
        if not family:
            return (f"The built-in playbook only writes kernels for the op families it knows, and the runner did not "
                    f"recognise “{problem.name}” as one of them: this problem needs an LLM. Set ANTHROPIC_API_KEY "
                    "and choose the Anthropic proposer.")
        if not proposer_class(proposer).supports(family, device):
            return (f"The built-in playbook has no {device} kernels for the “{family}” family: this problem needs an "
                    "LLM. Set ANTHROPIC_API_KEY and choose the Anthropic proposer.")
    return ""


def playbook_support(problem: Problem) -> str:
    """Why the built-in playbook cannot serve `problem` on its device, or "" when it can; known once
    validation has named the problem's family."""
    return search_proposer_unavailable(problem=problem, proposer=Search.Proposer.PLAYBOOK, device=problem.device)


def search_leaderboard(*, search: Search, limit: int = 20) -> list[Kernel]:
    """The search's correct kernels, fastest first (quarantined ones last, flagged)."""
    return list(
        Kernel.objects.filter(search=search, status=Verdict.CORRECT, median_ms__isnull=False)
        .select_related("idea")
        .order_by("quarantined", "median_ms", "id")[:limit]
    )


def search_counts(*, search: Search) -> dict:
    """How many of the search's kernels are in each state, for progress displays."""
    counts = {}
    for status, code in Kernel.objects.filter(search=search).values_list("status", "reason_code"):
        status = Kernel.shown(status, code)
        counts[status] = counts.get(status, 0) + 1
    return counts


# What the tree's own reads add to each kernel's view (kernel_view.py): who approved it (the ranking), its GPU
# and when it was judged (the charts). The rows' data is the view alone (views/search_tree.py).
TREE_EXTRAS = ("approved_by_id", "device_name", "evaluated_at")
# Not judged: waiting, being judged, or dropped by a cancellation; none counts as a failure.
UNJUDGED = (Verdict.PENDING, Verdict.EVALUATING, Kernel.CANCELLED)


def search_tree(*, search: Search) -> dict:
    """The search's kernels and ideas as plain dicts plus the links between them: compact
    enough to render 2,000 nodes quickly."""
    rows = Kernel.objects.filter(search=search).order_by("id").values(*dict.fromkeys(VIEW_FIELDS + TREE_EXTRAS))
    kernels = [{**kernel_view(k, search.problem), **{name: k[name] for name in TREE_EXTRAS}} for k in rows]
    ideas = list(Idea.objects.filter(search=search).order_by("id").values("id", "parent_kernel_id", "round", "title",
                                                                          "origin"))
    kernel_ids = {k["id"] for k in kernels}
    idea_ids = {i["id"] for i in ideas}
    ideas_of_kernel, kernels_of_idea, repairs_of_kernel, roots = defaultdict(list), defaultdict(list), defaultdict(list), []
    root_ideas = []
    for idea in ideas:
        if idea["parent_kernel_id"] in kernel_ids:
            ideas_of_kernel[idea["parent_kernel_id"]].append(idea)
        else:
            root_ideas.append(idea)
    for k in kernels:
        if k["idea_id"] in idea_ids:
            kernels_of_idea[k["idea_id"]].append(k)
        elif k["parent_id"] in kernel_ids:
            repairs_of_kernel[k["parent_id"]].append(k)
        else:
            roots.append(k)
    with_baselines([k for k in kernels if k["median_ms"] is not None])
    best = pick_best([k for k in kernels if kernel_is_ranked(k)], search.device)
    return {
        "kernels": kernels, "ideas": ideas, "roots": roots, "root_ideas": root_ideas,
        "ideas_of_kernel": ideas_of_kernel, "kernels_of_idea": kernels_of_idea, "repairs_of_kernel": repairs_of_kernel,
        "best": best, "best_path": _best_path(kernels, best),
    }


def _best_path(kernels: list[dict], best: dict | None) -> dict:
    """Kernel ids and idea ids from the root to the best kernel."""
    path = {"kernels": set(), "ideas": set()}
    by_id = {k["id"]: k for k in kernels}
    node = best
    while node is not None and node["id"] not in path["kernels"]:
        path["kernels"].add(node["id"])
        if node["idea_id"]:
            path["ideas"].add(node["idea_id"])
        node = by_id.get(node["parent_id"])
    return path


def search_best_speedup_by_round(tree: dict, last_round: int) -> list[dict]:
    """The best ranked speedups (vs eager and vs torch.compile) found up to and including each
    round, from round 0 to the later of `last_round` and the last round with a kernel."""
    best_eager = best_compile = None
    per_round = defaultdict(list)
    for k in tree["kernels"]:
        if kernel_is_ranked(k):
            per_round[k["round"]].append(k)
    last = max([last_round, *(k["round"] for k in tree["kernels"])])
    series = []
    for r in range(0, last + 1):
        for k in per_round.get(r, []):
            if k["speedup_vs_eager"] is not None:
                best_eager = max(best_eager or 0, k["speedup_vs_eager"])
            if k["speedup_vs_compile"] is not None:
                best_compile = max(best_compile or 0, k["speedup_vs_compile"])
        # `ranked`: how many ranked kernels the round itself produced (0: nothing to plot there).
        series.append({"round": r, "eager": best_eager, "compile": best_compile, "ranked": len(per_round.get(r, []))})
    return series


def search_speedup_over_time(tree: dict, started_at) -> list[dict]:
    """Each ranked kernel's speedups at the time its verdict landed, in seconds since `started_at`
    (kernels copied by a fork keep their original time, so they count from 0), and as `n` its
    number among all judged candidates in verdict order (failures count: they cost a candidate)."""
    judged = sorted((k for k in tree["kernels"] if k["evaluated_at"] is not None and k["status"] not in UNJUDGED),
                    key=lambda k: (k["evaluated_at"], k["id"]))
    points = []
    for n, k in enumerate(judged, start=1):
        if kernel_is_ranked(k) and started_at is not None:
            points.append({"t": max(0.0, (k["evaluated_at"] - started_at).total_seconds()), "n": n,
                           "eager": k["speedup_vs_eager"], "compile": k["speedup_vs_compile"]})
    return points


def search_idea_outcomes(idea_stats: list[dict], limit: int = 12) -> list[dict]:
    """The first `limit` ideas of `search_idea_stats`: kernels correct, failed and waiting, best speedup."""
    return [{"title": s["idea"]["title"], "correct": s["correct"], "failed": s["evaluated"] - s["correct"],
             "waiting": s["waiting"], "best": s["best_speedup"]} for s in idea_stats[:limit]]


def search_idea_stats(tree: dict) -> list[dict]:
    """Per idea: how many of its kernels were correct, and the best speedup among them."""
    stats = []
    for idea in tree["ideas"]:
        kernels = tree["kernels_of_idea"].get(idea["id"], [])
        done = [k for k in kernels if k["status"] not in UNJUDGED]
        correct = [k for k in done if k["status"] == Verdict.CORRECT]
        speedups = [k["speedup_vs_eager"] for k in correct if k["speedup_vs_eager"] is not None]
        repairs = [k for k in done if k["origin"] == Kernel.Origin.REPAIR]
        stats.append({
            "idea": idea, "kernels": len(kernels), "evaluated": len(done), "correct": len(correct),
            "waiting": sum(k["status"] in (Verdict.PENDING, Verdict.EVALUATING) for k in kernels),
            "rate": (len(correct) / len(done)) if done else None, "best_speedup": max(speedups, default=None),
            "repairs": len(repairs), "repairs_fixed": sum(k["status"] == Verdict.CORRECT for k in repairs),
        })
    stats.sort(key=lambda s: (s["rate"] is None, -(s["rate"] or 0), -s["evaluated"]))
    return stats


def search_parent_choices(*, search: Search, limit: int = 30) -> list[Kernel]:
    """Kernels a person may build an idea on: the search's correct ones, fastest first."""
    return list(Kernel.objects.filter(search=search, status=Verdict.CORRECT).exclude(median_ms=None)
                .order_by("median_ms").only("code", "name", "median_ms", "round")[:limit])


def search_planned_candidates(search: Search) -> int:
    """The candidate budget, or the number the round settings lead to when there is none."""
    if search.max_candidates:
        return search.max_candidates
    per_round = search.parents_per_round * search.ideas_per_parent * search.kernels_per_idea
    return max(1, search.rounds * per_round)


# kernel_is_ranked as a filter on a search's kernels.
RANKED_KERNELS = ranked_q("kernels__")


def search_list(*, problem=None, every_version: bool = False, suite=None, limit: int = 200) -> list[Search]:
    """Newest first, each with its planned candidates and best ranked kernel (`best`, as `speedups`
    defines it, with its baseline time; two queries); of one
    problem version, or of all versions of its problem (`every_version`), or on a suite's problems
    (as suite_search_counts counts them). `last_event_seq`: its stream's last number, for the list's live rows."""
    qs = (live_events.with_last_seq(Search.objects, live_events.SEARCH)
          .select_related("problem", "created_by").order_by("-created_at")
          .annotate(fastest_id=_best_kernel_id(Device.CUDA), top_paired_id=_best_kernel_id(Device.CPU)))
    if problem is not None:
        qs = qs.filter(problem__lineage=problem.lineage) if every_version else qs.filter(problem=problem)
    if suite is not None:
        qs = qs.filter(problem__suite_memberships__suite=suite)
    searches = list(qs[:limit])
    best_ids = {s.pk: s.top_paired_id if ranks_by_paired(s.device) else s.fastest_id for s in searches}
    best = {k.id: k for k in with_baselines(Kernel.objects.filter(id__in=[i for i in best_ids.values() if i]))}
    for search in searches:
        search.planned = search_planned_candidates(search)
        search.best = best.get(best_ids[search.pk])
    return searches


def _best_kernel_id(device: str):
    """The id of a search's best ranked kernel as `speedups` orders them on `device`."""
    ranked = Kernel.objects.filter(search=OuterRef("pk")).ranked()
    return Subquery(ranked.order_by(*best_order(device)).values("id")[:1])


def search_provenance(*, search: Search) -> list[dict]:
    """The environments of the search's latest runs (a search may span GPUs of one model)."""
    return provenance(BenchmarkRun.objects.filter(kernel__search=search).order_by("-created_at")[:50])
