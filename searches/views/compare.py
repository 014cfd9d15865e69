"""Any two kernels side by side: a synchronised diff and the timing delta."""

import uuid

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.safestring import mark_safe

from lib.diff_table import diff_rows, diff_stats, refused, render_diff

from .. import selectors
from ..models import Kernel, ShareLink


def compare_context(a: Kernel, b: Kernel, *, shared: bool = False) -> dict:
    rows = diff_rows(a.source, b.source)
    delta = None
    if a.median_ms and b.median_ms:
        delta = {"ms": b.median_ms - a.median_ms, "abs_ms": abs(b.median_ms - a.median_ms),
                 "ratio": a.median_ms / b.median_ms,
                 "same_device": a.device_name == b.device_name}
    runs = [selectors.kernel_primary_run(selectors.kernel_runs(kernel=k)) for k in (a, b)]
    for kernel in (a, b):
        kernel.sol = selectors.speed_of_light(kernel.problem, kernel)
    return {
        "a": a, "b": b, "pair": [a, b], "delta": delta, "stats": diff_stats(rows), "diff_refused": refused(rows),
        "diff": mark_safe(render_diff(rows, left_title=str(a), right_title=str(b))),  # noqa: S308  escaped inside
        "provenance": selectors.provenance(runs), "shared": shared,
    }


def _codes(request) -> list:
    raw = [request.GET.get("a", ""), request.GET.get("b", "")] if "a" in request.GET else request.GET.getlist("k")
    codes = []
    for value in raw:
        try:
            codes.append(uuid.UUID(value.strip()))
        except (ValueError, AttributeError):
            codes.append(None)
    return codes


@login_required
def compare(request):
    codes = _codes(request)
    context = {"error": "", "a_code": request.GET.get("a", ""), "b_code": request.GET.get("b", "")}
    if not codes:
        return render(request, "searches/compare/detail.html", context)
    if len(codes) != 2:
        context["error"] = f"Pick exactly two kernels to compare (you picked {len(codes)})."
        return render(request, "searches/compare/detail.html", context, status=400)
    if None in codes:
        context["error"] = "A kernel code is not valid: use the code shown on a kernel's page."
        return render(request, "searches/compare/detail.html", context, status=400)
    kernels = {k.code: k for k in Kernel.objects.select_related("problem", "search").filter(code__in=codes)}
    missing = [str(c) for c in codes if c not in kernels]
    if missing:
        context["error"] = f"No kernel has the code {missing[0]}."
        return render(request, "searches/compare/detail.html", context, status=404)
    a, b = kernels[codes[0]], kernels[codes[1]]
    problem = selectors.kernel_compare_problem(a, b)
    if problem:
        context["error"] = problem
        return render(request, "searches/compare/detail.html", context, status=400)
    context.update(compare_context(a, b))
    context.update({"share_links": selectors.share_links_for(kernel=a, other_kernel=b, kind=ShareLink.Kind.COMPARE),
                    "share_kind": ShareLink.Kind.COMPARE, "share_fields": [("a", a.code), ("b", b.code)]})
    return render(request, "searches/compare/detail.html", context)
