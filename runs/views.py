"""Run pages: a suite's runs, one run's scores, and two or more runs of one suite side by side.
Every number is labelled with the mode (KernelLab), the rule (sample 0, best of N) and the baseline."""

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from lib.plots import fast_p_curves_chart, speedup_distribution_chart
from searches.models import Suite

from .models import Run
from .selectors import BASELINES, run_scores, runs_comparison, suite_runs


def _baseline(request) -> str:
    asked = request.GET.get("baseline", "eager")
    return asked if asked in BASELINES else "eager"


def _charts(scores: list[dict], rule: str) -> dict:
    return {"curves": fast_p_curves_chart([s["rules"][rule]["curve"] for s in scores]),
            "spread": speedup_distribution_chart([s["rules"][rule]["speedups"] for s in scores])}


@login_required
@require_GET
def suite_run_list(request, code):
    suite = get_object_or_404(Suite, code=code)
    runs = [run_scores(run) for run in suite_runs(suite)]
    return render(request, "runs/list.html", {"suite": suite, "runs": runs})


@login_required
@require_GET
def run_detail(request, code):
    run = get_object_or_404(Run.objects.select_related("suite"), code=code)
    score = run_scores(run, _baseline(request))
    return render(request, "runs/detail.html", {"score": score, "run": run, "baselines": BASELINES,
                                                "charts": _charts([score], "best")})


@login_required
@require_GET
def run_compare(request):
    codes = request.GET.getlist("runs")
    runs = list(Run.objects.filter(code__in=codes).select_related("suite").order_by("created_at", "id")) \
        if all(_is_uuid(c) for c in codes) else []
    if len(runs) < 2 or len(runs) != len(set(codes)) or len({r.suite_id for r in runs}) != 1:
        return HttpResponseBadRequest("Choose two or more runs of one suite to compare.")
    rule = request.GET.get("rule") if request.GET.get("rule") in ("sample0", "best") else "best"
    comparison = runs_comparison(runs, _baseline(request))
    return render(request, "runs/compare.html", {"comparison": comparison, "suite": runs[0].suite, "rule": rule,
                                                 "baselines": BASELINES, "charts": _charts(comparison["scores"], rule),
                                                 "codes": codes})


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
