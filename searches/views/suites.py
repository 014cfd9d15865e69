"""Suite pages: the list, the import form (several files or a zip, one request), a suite's
scores per GPU model and their JSON/CSV export (also drawn for its share links, see share.py),
and one search configuration started over a suite."""

import csv

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from lib.ratelimit import limits_sandbox_work
from lib.spreadsheet import csv_cell

from .. import selectors, services
from ..forms import SearchStartForm, SuiteImportForm
from ..models import ShareLink, Suite


@login_required
@require_GET
def suite_list(request):
    return render(request, "searches/suites/list.html", {"suites": selectors.suite_list(), "form": SuiteImportForm()})


@login_required
@require_http_methods(["GET", "POST"])
@limits_sandbox_work  # one POST; each validation it queues counts against the person's cap (evaluation/scheduling.py)
def suite_import(request):
    initial = {"name": request.GET.get("suite", ""), "device": selectors.default_device()}
    form = SuiteImportForm(request.POST or None, request.FILES or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            files = services.files_from_uploads(data["files"])
            report = services.suite_import(user=request.user, suite_name=data["name"], files=files,
                                           device=data["device"], validate=data["validate"])
        except ValidationError as error:
            form.add_error(None, error)
        else:
            return render(request, "searches/suites/report.html", {"report": report, "validated": data["validate"]})
    limits = {"problems": settings.SUITE_IMPORT_MAX_PROBLEMS, "bytes": settings.SUITE_IMPORT_MAX_BYTES,
              "jobs": settings.MAX_QUEUED_JOBS_PER_USER}
    return render(request, "searches/suites/import.html", {"form": form, "limits": limits})


def suite_context(suite: Suite, *, share_token: str = "", outcome: str = "") -> dict:
    """What the suite's page and its shared copy both show. With a share token, the page's links
    (live refresh, exports, kernels) go through the token, and problems are plain text. `outcome`
    (one of the verdict counts, which link here) keeps only the problems with that outcome."""
    outcome = outcome if outcome in selectors.SUITE_OUTCOMES else ""
    shared = bool(share_token)
    if shared:
        page_url = reverse("shared", kwargs={"token": share_token})
        exports = {fmt: reverse(f"shared_suite_{fmt}", kwargs={"token": share_token}) for fmt in ("json", "csv")}
    else:
        page_url = reverse("suite_detail", kwargs={"code": suite.code})
        exports = {fmt: reverse(f"suite_{fmt}", kwargs={"code": suite.code}) for fmt in ("json", "csv")}
    # Progress before scores: the page stops fetching once nothing is in progress, so a verdict recorded
    # between the two reads must leave the page busy, never idle with that kernel missing from its scores.
    progress = selectors.suite_progress(suite)
    return {"suite": suite, "members": selectors.suite_members(suite), "scores": selectors.suite_scores(suite),
            "search_counts": selectors.suite_search_counts(suite), "progress": progress,
            "live_url": page_url + "?fragment=1" + (f"&outcome={outcome}" if outcome else ""), "page_url": page_url,
            "outcome": outcome, "exports": exports, "shared": shared, "share_token": share_token}


def suite_fragment(request, context: dict):
    """The part of the page that moves, which the page's script fetches again while work is in progress."""
    response = render(request, "searches/suites/_live.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_GET
def suite_detail(request, code):
    suite = get_object_or_404(Suite, code=code)
    context = suite_context(suite, outcome=request.GET.get("outcome", ""))
    if request.GET.get("fragment"):
        return suite_fragment(request, context)
    context.update({"share_links": selectors.share_links_for(suite=suite, kind=ShareLink.Kind.SUITE),
                    "share_kind": ShareLink.Kind.SUITE,
                    "may_add": services.may_add_to_suite(suite, request.user)})  # its owner's and administrators'
    return render(request, "searches/suites/detail.html", context)


@login_required
@require_POST
@limits_sandbox_work  # one request for the whole suite
def suite_validate(request, code):
    suite = get_object_or_404(Suite, code=code)
    asked = services.suite_request_validation(suite=suite, user=request.user)  # OverQuota (429) with no room
    messages.success(request, f"Queued the validation of {asked.queued} stored problem{'s' if asked.queued != 1 else ''}.")
    if asked.held:
        messages.warning(request, f"{asked.held} more wait{'s' if asked.held == 1 else ''}: {asked.refusal}")
    return redirect("suite_detail", code=suite.code)


@login_required
@require_http_methods(["GET", "POST"])
@limits_sandbox_work  # one request; each search it starts counts against the person's cap
def suite_search(request, code):
    """One search configuration over every problem of the suite, each search with its own budget,
    as many as the person's cap on active searches allows (OverQuota, a 429, when it allows none)."""
    suite = get_object_or_404(Suite, code=code)
    form = SearchStartForm(request.POST or None, initial={"device": selectors.suite_device(suite)})
    if request.method == "POST" and form.is_valid():
        rows = services.suite_start_searches(user=request.user, suite=suite, **form.search_fields())
        started = sum(1 for row in rows if row.search is not None)
        return render(request, "searches/suites/search_report.html",
                      {"suite": suite, "rows": rows, "started": started, "refused": len(rows) - started})
    return render(request, "searches/suites/search.html",
                  {"suite": suite, "form": form, "members": selectors.suite_members(suite)})


CSV_COLUMNS = ("device_name", "level", "number", "file", "problem", "problem_code", "outcome", "best_kernel_code",
               "speedup_vs_eager", "speedup_vs_compile")


@login_required
@require_GET
def suite_export(request, code, fmt):
    return suite_export_response(get_object_or_404(Suite, code=code), fmt)


def suite_export_response(suite: Suite, fmt: str) -> HttpResponse:
    """The scores as JSON, or as CSV with one line per GPU model and problem."""
    data = selectors.suite_scores_export(suite)
    if fmt == "json":
        return JsonResponse(data, json_dumps_params={"indent": 1})
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="suite-{suite.code}.csv"'
    writer = csv.writer(response)
    writer.writerow(CSV_COLUMNS)
    for score in data["scores"]:
        for row in score["rows"]:
            writer.writerow([csv_cell(score["device_name"])] + [csv_cell(row[key]) for key in CSV_COLUMNS[1:]])
    return response

