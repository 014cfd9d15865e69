"""Problem pages: list, detail, create (paste or upload), edit, and the validation status
that the detail page polls while a sandboxed validation is pending."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST, require_http_methods

from lib.ratelimit import limits_sandbox_work
from live import events as live_events

from .. import selectors, services
from ..forms import ProblemCreateForm, ProblemForm
from ..models import Problem
from ..problem_checks import human_size
from ..problem_memory import input_bytes

PROBLEMS_PER_PAGE = 50


def _form_page(request, context):
    context["source_limit"] = human_size(settings.PROBLEM_SOURCE_MAX_BYTES)
    return render(request, "searches/problems/form.html", context)


@login_required
@require_GET
def problem_list(request):
    """One page of problems: an import can add thousands, and each row costs a validation lookup."""
    page = Paginator(selectors.problem_list(), PROBLEMS_PER_PAGE).get_page(request.GET.get("page"))
    problems = list(page.object_list)
    for problem in problems:
        problem.state = selectors.problem_validation_state(problem)
    page_links = page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1)
    return render(request, "searches/problems/list.html", {"problems": problems, "page": page,
                                                           "page_links": page_links})


@login_required
@require_GET
def problem_detail(request, code):
    problem = get_object_or_404(Problem, code=code)
    context = {
        "problem": problem,
        "state": selectors.problem_validation_state(problem),
        "latest": selectors.problem_latest_version(problem),
        "versions": selectors.problem_versions(problem),
        "validation": problem.validation or {},
        "input_bytes": input_bytes(problem.source),
        "playbook_unsupported": selectors.playbook_support(problem),
        "may_edit": services.may_edit_problem(problem, request.user),
        "last_event_seq": live_events.last_seq(live_events.PROBLEM, problem.id),
    }
    return render(request, "searches/problems/detail.html", context)


@login_required
@require_GET
def problem_validation_status(request, code):
    problem = get_object_or_404(Problem, code=code)
    state = selectors.problem_validation_state(problem)
    return JsonResponse({**state, "validation_status": problem.validation_status})


@login_required
@require_http_methods(["GET", "POST"])
@limits_sandbox_work
def problem_create(request):
    form = ProblemCreateForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            problem = services.problem_create(user=request.user, **form.problem_fields())
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(request, f"Saved “{problem.name}”. It is being validated in a sandbox." + (
                "" if input_bytes(problem.source) is not None else
                " Its input size could not be read from the source, so whether it fits the workers is not known yet."))
            return redirect("problem_detail", code=problem.code)
    return _form_page(request, {"form": form, "creating": True})


@login_required
@require_http_methods(["GET", "POST"])
@limits_sandbox_work
def problem_edit(request, code):
    problem = get_object_or_404(Problem, code=code)
    if not problem.is_latest:
        latest = selectors.problem_latest_version(problem)
        messages.info(request, f"Version {problem.version} is not the latest: you are editing version {latest.version}.")
        return redirect("problem_edit", code=latest.code)
    if not services.may_edit_problem(problem, request.user):
        raise PermissionDenied("Only the person who created this problem, or an administrator, can edit it.")
    initial = {key: getattr(problem, key) for key in ("name", "description", "source", "atol", "rtol", "device")}
    form = ProblemForm(request.POST or None, initial=initial)
    has_results = problem.searches.exists() or problem.kernels.exists()
    if request.method == "POST" and form.is_valid():
        try:
            saved = services.problem_update(problem=problem, user=request.user, **form.problem_fields())
        except ValidationError as error:
            form.add_error(None, error)
        else:
            if saved.pk != problem.pk:
                messages.success(request, f"Saved as version {saved.version}; version {problem.version} keeps its results.")
            elif saved.validation_status == Problem.Validation.PENDING:
                messages.success(request, "Saved. The new source is being validated.")
            else:
                messages.success(request, "Saved.")
            return redirect("problem_detail", code=saved.code)
    context = {"form": form, "problem": problem, "creating": False, "has_results": has_results}
    return _form_page(request, context)


@login_required
@require_POST
@limits_sandbox_work
def problem_revalidate(request, code):
    problem = get_object_or_404(Problem, code=code)
    services.problem_request_validation(problem=problem, user=request.user)
    messages.success(request, "Validation queued.")
    return redirect("problem_detail", code=problem.code)
