"""Search pages: start, watch (tree, progress, chart), control, and people-in-the-loop forms."""

import secrets

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from lib import gzip_parts
from lib.gzip_parts import Compressed
from lib.plots import idea_outcomes_chart, speedup_chart, speedup_over_time_chart
from lib.ratelimit import limits_sandbox_work
from live import events as live_events

from .. import selectors, services
from ..forms import IdeaAddForm, KernelSubmitForm, SearchForkForm, SearchStartForm
from ..models import Kernel, Problem, Search, ShareLink, Suite, Verdict
from .search_tree import MARKS, QUARANTINE_MARK, cached_for_search, matching_ids, render_tree

IDEA_TABLE_ROWS = 40  # the rest show their rate on their node in the tree
IDEA_CHART_ROWS = 12
# Where the cached tree goes in a rendered page (never in a page's own text: the code is random).
TREE_MARKER = mark_safe(f"<!--tree-{secrets.token_hex(8)}-->")  # noqa: S308
CONTROL_ACTIONS = {"pause": "search_pause", "resume": "search_resume", "cancel": "search_cancel"}


def error_text(error: ValidationError | PermissionDenied) -> str:
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error) or "You are not allowed to do that."


def add_service_errors(form, error: ValidationError) -> None:
    """Put a service's ValidationError on the form fields it names, the rest on the form."""
    if hasattr(error, "error_dict"):
        for field, errors in error.error_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        # Services name the offending knob in the error's code.
        code = getattr(error, "code", None)
        form.add_error(code if code in form.fields else None, error)


@login_required
def search_list(request):
    """Every search, or one problem version's (?problem=CODE), or every version's (&versions=all),
    or a suite's problems' (?suite=CODE): what the problem and suite pages' counts count."""
    problem, suite, every_version = None, None, request.GET.get("versions") == "all"
    if request.GET.get("problem"):
        problem = get_object_or_404(Problem, code=_uuid_or_none(request.GET["problem"]))
    if request.GET.get("suite"):
        suite = get_object_or_404(Suite, code=_uuid_or_none(request.GET["suite"]))
    searches = selectors.search_list(problem=problem, every_version=every_version, suite=suite)
    selectors.search_stalls(searches=searches)  # each active one's `stalled` reason, or ""
    return render(request, "searches/search/list.html",
                  {"searches": searches, "problem": problem, "suite": suite, "every_version": every_version})


@login_required
@limits_sandbox_work
def search_new(request, code):
    problem = get_object_or_404(Problem, code=code)
    form = SearchStartForm(request.POST or None, initial={"device": problem.device})
    if request.method == "POST" and form.is_valid():
        try:
            search = services.search_start(problem=problem, user=request.user, **form.search_fields())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, "Search started.")
            return redirect("search_detail", code=search.code)
    return render(request, "searches/search/new.html", {"problem": problem, "form": form,
                                                        "playbook_unsupported": selectors.playbook_support(problem)})


def search_context(search: Search, *, status: str = "", round_: int | None = None, shared: bool = False,
                   shared_kernel_url=None) -> dict:
    """Everything the search page shows; also used by its read-only shared version, whose nodes
    link through `shared_kernel_url(code)` to the token-scoped kernel pages."""
    last_seq = live_events.last_seq(live_events.SEARCH, search.id)  # read before the tree: replay may repeat, never miss
    kernel_url = shared_kernel_url if shared else (lambda c: reverse("kernel_detail", kwargs={"code": c}))

    def tree_parts() -> dict:  # the tree and what is drawn from it, rendered: the same for every viewer
        tree = selectors.search_tree(search=search)
        shown = matching_ids(tree, status=status, round_=round_)
        statuses = sorted({k["status"] for k in tree["kernels"]})
        insights = insights_context(search, tree)
        parts = {
            # Escaped inside; compressed once here, spliced into each response (lib/gzip_parts.py).
            "tree_part": Compressed.of(render_tree(tree, kernel_url=kernel_url, pickable=not shared, shown=shown,
                                                   idea_stats=insights["all_idea_stats"])),
            "insights_html": render_insights(insights),
            "kernel_count": len(tree["kernels"]),
            "idea_count": len(tree["ideas"]),
            "best": tree["best"],
            "status_choices": [(s, MARKS.get(s, ("", s))[1]) for s in statuses] + [("quarantined", "Quarantined")],
            "round_choices": sorted({k["round"] for k in tree["kernels"]}),
        }
        if not shared:  # the owner's forms, without their CSRF tokens
            parts["fork_knobs_html"] = render_to_string("searches/search/_knobs.html",
                                                        {"form": SearchForkForm.for_search(search)})
            parts["fork_parents"] = search.parents_per_round
            parts["parent_choices_html"] = render_to_string(
                "searches/search/_parent_choices.html", {"parent_choices": selectors.search_parent_choices(search=search)})
        return parts

    # Built once per change of the search for every viewer; the key's seq is the one read above, and
    # the tree read under it is at least that new.
    page = f"page:{shared}:{status}:{round_}:{kernel_url('00000000-0000-0000-0000-000000000000')}"
    planned = selectors.search_planned_candidates(search)
    end = search.finished_at or timezone.now()
    elapsed = (end - search.started_at).total_seconds() if search.started_at else None
    return {
        "search": search,
        "problem": search.problem,
        **cached_for_search(search, last_seq, page, tree_parts),
        "tree_html": TREE_MARKER,
        "planned": planned,
        "percent": min(100, round(100 * search.candidates_evaluated / planned)) if planned else 0,
        "elapsed": elapsed,
        "filter_status": status,
        "filter_round": round_,
        "live": {
            "code": str(search.code), "seq": last_seq, "ws": f"/ws/searches/{search.code}/",
            "kernel_url": reverse("kernel_detail", kwargs={"code": "00000000-0000-0000-0000-000000000000"}),
            "insights_url": reverse("search_insights", kwargs={"code": search.code}),
            "marks": {k: list(v) for k, v in MARKS.items()}, "quarantine": list(QUARANTINE_MARK),
            "paired": selectors.ranks_by_paired(search.device),
            "planned": planned, "active": search.status in Search.ACTIVE or search.status == Search.Status.PAUSED,
        } if not shared else None,
        "provenance": selectors.search_provenance(search=search),
        "shared": shared,
    }


def render_insights(insights: dict) -> str:
    return render_to_string("searches/search/_insights.html", insights)


def insights_context(search: Search, tree: dict) -> dict:
    """The charts (best speedup by round, speedup over time, outcomes per idea) and the ideas' success rates."""
    idea_stats = selectors.search_idea_stats(tree)
    over_time = selectors.search_speedup_over_time(tree, search.started_at or search.created_at)
    # Drawn by lib.plots from numbers and escaped titles only.
    return {
        "chart": mark_safe(speedup_chart(selectors.search_best_speedup_by_round(tree, search.current_round))),  # noqa: S308
        "time_chart": mark_safe(speedup_over_time_chart(over_time)),  # noqa: S308
        "candidates_chart": mark_safe(speedup_over_time_chart(over_time, by="n")),  # noqa: S308
        "ideas_chart": mark_safe(idea_outcomes_chart(selectors.search_idea_outcomes(idea_stats, IDEA_CHART_ROWS))),  # noqa: S308
        "all_idea_stats": idea_stats,
        "idea_stats": idea_stats[:IDEA_TABLE_ROWS],
        "idea_stats_more": max(0, len(idea_stats) - IDEA_TABLE_ROWS),
    }


def search_queue_note(search: Search) -> str:
    """Where the search's waiting candidates stand in the evaluation queue, or ""."""
    place = selectors.queue_for_kernels(Kernel.objects.filter(search=search).values("id"))
    if not place:
        return ""
    text = selectors.queue_wait_text(place)
    n, reruns = place["waiting"], place.get("reruns", 0)
    # A finished search's waiting jobs are its verified reruns: name them so, not as candidates.
    what = [f"{n - reruns} candidate{'s' if n - reruns != 1 else ''}"] if n > reruns else []
    what += [f"{reruns} verified rerun{'s' if reruns != 1 else ''}"] if reruns else []
    return f"{' and '.join(what)} wait{'' if n != 1 else 's'} for evaluation; the first: {text[0].lower()}{text[1:]}"


@login_required
def search_insights(request, code):
    """The charts, the ideas table and the provenance alone: the search page fetches them again as kernels land."""
    search = get_object_or_404(Search, code=code)
    seq = live_events.last_seq(live_events.SEARCH, search.id)
    insights_html = cached_for_search(search, seq, "insights",  # every viewer fetches it after each verdict
                                      lambda: render_insights(insights_context(search, selectors.search_tree(search=search))))
    context = {"insights_html": insights_html, "provenance": selectors.search_provenance(search=search),
               "queue_note": search_queue_note(search), "fragment": True}
    response = render(request, "searches/search/_live_parts.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
def search_detail(request, code):
    search = get_object_or_404(Search.objects.select_related("problem", "created_by", "forked_from"), code=code)
    status = request.GET.get("status", "")
    if status and status not in Verdict.values and status != "quarantined":
        status = ""
    try:
        round_ = int(request.GET["round"]) if request.GET.get("round") else None
    except ValueError:
        round_ = None
    selectors.search_stalls(searches=[search])
    context = search_context(search, status=status, round_=round_)
    context.update({
        "idea_form": IdeaAddForm(), "share_links": selectors.share_links_for(search=search),
        "share_kind": ShareLink.Kind.SEARCH, "live_json": context["live"],
        "may_steer": services.may_steer(search, request.user), "queue_note": search_queue_note(search),
        "pause_effect": services.PAUSE_EFFECT,
    })
    response = render(request, "searches/search/detail.html", context)
    return gzip_parts.respond(request, response, TREE_MARKER, context["tree_part"])


@login_required
@require_POST
def search_control(request, code, action):
    search = get_object_or_404(Search, code=code)
    service = getattr(services, CONTROL_ACTIONS[action])
    try:
        service(search=search, user=request.user)
    except (ValidationError, PermissionDenied) as error:
        messages.error(request, f"Could not {action} the search: {error_text(error)}")
    else:
        messages.success(request, {"pause": f"Search paused: {services.PAUSE_EFFECT}.", "resume": "Search resumed.",
                                   "cancel": "Search cancelled."}[action])
    return redirect("search_detail", code=search.code)


# --- fork (owned by the search-settings work: keep edits here delimited) ---------------------------


@login_required
@require_POST
@limits_sandbox_work
def search_fork(request, code):
    """Fork from a kernel (its code in `from_kernel`), else from the search's best kernels; with
    the fork form's options when it was sent, else with the source's own knobs."""
    search = get_object_or_404(Search, code=code)
    from_kernel = None
    if request.POST.get("from_kernel"):
        from_kernel = Kernel.objects.filter(code=_uuid_or_none(request.POST["from_kernel"])).first()
        if from_kernel is None:
            messages.error(request, "Could not fork: that kernel does not exist.")
            return redirect("search_detail", code=search.code)
    overrides = {}
    if "fork-proposer" in request.POST:
        form = SearchForkForm.for_search(search, request.POST)
        if not form.is_valid():
            messages.error(request, "Could not fork the search: " + _form_errors(form))
            return redirect("search_detail", code=search.code)
        overrides = form.search_fields()
    try:
        fork = services.search_fork(search=search, user=request.user, from_kernel=from_kernel, **overrides)
    except (ValidationError, PermissionDenied) as error:
        messages.error(request, f"Could not fork the search: {error_text(error)}")
        return redirect("search_detail", code=search.code)
    messages.success(request, "Forked: this is the new search.")
    return redirect("search_detail", code=fork.code)


# --- end of fork ---------------------------------------------------------------------------------


@login_required
@require_POST
@limits_sandbox_work
def idea_add(request, code):
    search = get_object_or_404(Search, code=code)
    form = IdeaAddForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Could not add the idea: " + _form_errors(form))
        return redirect("search_detail", code=search.code)
    parent = Kernel.objects.filter(search=search, code=form.cleaned_data["parent_kernel"]).first()
    if parent is None:
        messages.error(request, "Could not add the idea: the parent kernel is not part of this search. "
                                "Copy the code of a kernel shown in this search's tree.")
        return redirect("search_detail", code=search.code)
    try:
        services.idea_add(search=search, user=request.user, parent_kernel=parent,
                          title=form.cleaned_data["title"], description=form.cleaned_data["description"])
    except (ValidationError, PermissionDenied) as error:
        messages.error(request, f"Could not add the idea: {error_text(error)}")
    else:
        messages.success(request, "Idea added: the search will implement it.")
    return redirect("search_detail", code=search.code)


@login_required
@limits_sandbox_work
def kernel_new(request, code=None, problem_code=None):
    """Submit a hand-written kernel to a search (code) or straight to a problem (problem_code)."""
    search = get_object_or_404(Search.objects.select_related("problem"), code=code) if code else None
    problem = search.problem if search else get_object_or_404(Problem, code=problem_code)
    if request.method == "POST":
        form = KernelSubmitForm(request.POST, request.FILES)
    else:  # "Start from a template" asks for a ModelNew skeleton of this problem
        form = KernelSubmitForm(initial={"source": selectors.kernel_template(problem)} if "template" in request.GET
                                else None)
    if request.method == "POST" and form.is_valid():
        parent = None
        if form.cleaned_data.get("parent"):
            parent = Kernel.objects.filter(problem=problem, code=form.cleaned_data["parent"]).first()
            if parent is None:
                form.add_error("parent", "No kernel of this problem has that code.")
        if not form.errors:
            try:
                kernel = services.kernel_submit(user=request.user, problem=problem, source=form.cleaned_data["source"],
                                                search=search, parent=parent, name=form.cleaned_data["name"])
            except ValidationError as error:
                add_service_errors(form, error)
            except PermissionDenied as error:
                form.add_error(None, error_text(error))
            else:
                messages.success(request, "Kernel submitted: it is queued for evaluation.")
                return redirect("kernel_detail", code=kernel.code)
    return render(request, "searches/kernel/new.html", {"form": form, "search": search, "problem": problem,
                                                        "source_limit": settings.KERNEL_SOURCE_MAX_BYTES})


def _form_errors(form) -> str:
    return " ".join(f"{'' if f == '__all__' else form.fields[f].label or f}: {' '.join(e)}".strip(": ")
                    for f, e in form.errors.items())


def _uuid_or_none(value: str):
    import uuid

    try:
        return uuid.UUID(value)
    except (ValueError, AttributeError):
        return None


