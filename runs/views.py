"""Run pages: a suite's runs, one run's scores, and two or more runs of one suite side by side.
Every number is labelled with the mode (KernelLab or KernelBench), the rule (sample 0, best of N) and the baseline."""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from lib.plots import fast_p_curves_chart, speedup_distribution_chart
from lib.ratelimit import limits_sandbox_work
from searches import selectors as searches_selectors
from searches import services as searches_services
from searches.forms import SearchStartForm
from searches.models import Suite

from .forms import RejudgeForm
from .models import Run
from .selectors import BASELINES, MODES, run_baselines, run_scores, runs_comparison, suite_runs
from .services import run_rejudge, run_start_searches


def _baseline(request, allowed=BASELINES) -> str:
    asked = request.GET.get("baseline", "eager")
    return asked if asked in allowed else "eager"


def _mode(request) -> str:
    asked = request.GET.get("mode")
    return asked if asked in MODES else MODES[0]


def _charts(scores: list[dict], rule: str) -> dict:
    return {"curves": fast_p_curves_chart([s["rules"][rule]["curve"] for s in scores]),
            "spread": speedup_distribution_chart([s["rules"][rule]["speedups"] for s in scores])}


@login_required
@require_GET
def suite_run_list(request, code):
    return _run_list(request, get_object_or_404(Suite, code=code), RejudgeForm())


def _run_list(request, suite: Suite, form: RejudgeForm):
    runs = [run_scores(run) for run in suite_runs(suite)]
    return render(request, "runs/list.html", {"suite": suite, "runs": runs, "form": form})


@login_required
@require_POST
@limits_sandbox_work  # one request for the whole folder
def suite_rejudge(request, code):
    """A zipped KernelBench runs folder judged as one run (as `manage.py rejudge` does)."""
    suite = get_object_or_404(Suite, code=code)
    form = RejudgeForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            files = searches_services.files_from_zip(form.cleaned_data["archive"])
            run, rows = run_rejudge(user=request.user, suite=suite, files=files, name=form.cleaned_data["name"],
                                    allow_library=form.cleaned_data["allow_library"], rule=form.cleaned_data["rule"],
                                    baselines=form.cleaned_data["baselines"])
        except ValidationError as error:
            form.add_error(None, error)
        else:
            queued = sum(1 for row in rows if row.kernel is not None)
            skipped = [f"{row.file}: {row.reason}" for row in rows if row.kernel is None]
            messages.success(request, f"{queued} of {len(rows)} files queued as run “{run.name}”.")
            for line in skipped[:20]:
                messages.warning(request, line)
            return redirect("run_detail", code=run.code)
    return _run_list(request, suite, form)


@login_required
@require_http_methods(["GET", "POST"])
@limits_sandbox_work  # one request; each search it starts counts against the person's cap
def run_start(request, code):
    """One search configuration on every problem of the suite, as one run (named by the form's
    name, else "Run N"); the searches' report, with a link to the run's page."""
    suite = get_object_or_404(Suite, code=code)
    form = SearchStartForm(request.POST or None, initial={"device": searches_selectors.suite_device(suite)})
    if request.method == "POST" and form.is_valid():
        fields = form.search_fields()
        name = fields.pop("name", "") or f"Run {suite_runs(suite).count() + 1}"
        try:
            run, rows = run_start_searches(user=request.user, suite=suite, name=name, **fields)
        except ValidationError as error:
            form.add_error("name", error)
        else:
            started = sum(1 for row in rows if row.search is not None)
            messages.success(request, format_html('Run <a href="{}">{}</a> started.',
                                                  reverse("run_detail", args=[run.code]), run.name))
            return render(request, "searches/suites/search_report.html",
                          {"suite": suite, "rows": rows, "started": started, "refused": len(rows) - started})
    return render(request, "searches/suites/search.html",
                  {"suite": suite, "form": form, "members": searches_selectors.suite_members(suite)})


@login_required
@require_GET
def run_detail(request, code):
    run = get_object_or_404(Run.objects.select_related("suite"), code=code)
    baselines = run_baselines(run)
    score = run_scores(run, _baseline(request, baselines))
    kernelbench = run_scores(run, score["baseline"], MODES[1])  # beside it, KernelBench's rule, same samples
    return render(request, "runs/detail.html", {"score": score, "kernelbench": kernelbench, "run": run,
                                                "baselines": baselines, "charts": _charts([score], "best")})


@login_required
@require_GET
def run_compare(request):
    codes = request.GET.getlist("runs")
    runs = list(Run.objects.filter(code__in=codes).select_related("suite").order_by("created_at", "id")) \
        if all(_is_uuid(c) for c in codes) else []
    if len(runs) < 2 or len(runs) != len(set(codes)) or len({r.suite_id for r in runs}) != 1:
        return HttpResponseBadRequest("Choose two or more runs of one suite to compare.")
    rule = request.GET.get("rule") if request.GET.get("rule") in ("sample0", "best") else "best"
    # the baselines every compared run was timed against
    baselines = tuple(b for b in run_baselines(runs[0]) if all(b in run_baselines(r) for r in runs))
    comparison = runs_comparison(runs, _baseline(request, baselines), _mode(request))
    return render(request, "runs/compare.html", {"comparison": comparison, "suite": runs[0].suite, "rule": rule,
                                                 "baselines": baselines, "modes": MODES, "codes": codes,
                                                 "charts": _charts(comparison["scores"], rule)})


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
