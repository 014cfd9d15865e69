"""Leaderboards: best correct kernels per problem version and GPU model, and their exports."""

import csv
import io

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from lib.spreadsheet import csv_cell

from .. import selectors
from ..models import Problem, ShareLink

EXPORT_COLUMNS = ["rank", "device_name", "kernel", "name", "median_ms", "speedup_vs_eager", "baseline",
                  "baseline_eager_ms", "speedup_vs_compile", "precision", "speed_of_light", "verified_rerun", "quarantined", "approved", "search", "origin",
                  "copies", "slower_than_eager", "ran_by", "evaluated_at"]


def leaderboard_context(problem: Problem, device_name: str = "", *, shared: bool = False) -> dict:
    boards = selectors.leaderboard(problem=problem, device_name=device_name)
    runs = [selectors.kernel_primary_run(selectors.kernel_runs(kernel=k)) for b in boards for k in b["ranked"][:3]]
    versions = Problem.objects.filter(lineage=problem.lineage).order_by("-version").only("code", "version", "name")
    return {"problem": problem, "boards": boards, "device_name": device_name, "versions": versions,
            "devices": selectors.leaderboard_devices(problem=problem), "provenance": selectors.provenance(runs),
            "shared": shared}


@login_required
def leaderboard_index(request):
    return render(request, "searches/leaderboard/index.html", {"problems": selectors.leaderboard_problems()})


@login_required
def leaderboard(request, code):
    problem = get_object_or_404(Problem, code=code)
    device = request.GET.get("device", "")
    context = leaderboard_context(problem, device)
    context.update({"share_links": selectors.share_links_for(problem=problem, kind=ShareLink.Kind.LEADERBOARD),
                    "share_kind": ShareLink.Kind.LEADERBOARD, "share_fields": [("device", device)]})
    return render(request, "searches/leaderboard/detail.html", context)


def export_payload(problem: Problem, device: str) -> dict:
    rows = selectors.leaderboard_rows(selectors.leaderboard(problem=problem, device_name=device))
    return {"problem": {"code": str(problem.code), "name": problem.name, "version": problem.version,
                        "lineage": str(problem.lineage)},
            "device_name": device or None, "generated_at": timezone.now().isoformat(), "entries": rows}


@login_required
def leaderboard_export(request, code, fmt):
    problem = get_object_or_404(Problem, code=code)
    payload = export_payload(problem, request.GET.get("device", ""))
    filename = f"leaderboard_{str(problem.code)[:8]}_v{problem.version}.{fmt}"
    if fmt == "json":
        response = JsonResponse(payload, json_dumps_params={"indent": 2})
    else:
        out = io.StringIO()
        # The export's columns, then the rest of each kernel's view (selectors/kernel_view.py).
        columns = EXPORT_COLUMNS + [key for key in selectors.kernel_view_keys() if key not in EXPORT_COLUMNS]
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        for row in payload["entries"]:
            writer.writerow({k: csv_cell(row[k]) for k in columns})
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
