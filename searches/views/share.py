"""Share links: create and revoke them on object pages; /s/<token>/ shows the read-only page
to anyone holding the token, without a login, until it is revoked (404 afterwards)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from .. import selectors, services
from ..forms import CompareForm, ShareLinkForm
from ..models import Kernel, Problem, Search, ShareLink
from .compare import compare_context
from .kernels import kernel_context
from .leaderboards import leaderboard_context
from .searches import error_text, search_context


def link_target_url(link: ShareLink) -> str:
    """The logged-in page a link shows."""
    if link.kind == ShareLink.Kind.SEARCH:
        return reverse("search_detail", kwargs={"code": link.search.code})
    if link.kind == ShareLink.Kind.KERNEL:
        return reverse("kernel_detail", kwargs={"code": link.kernel.code})
    if link.kind == ShareLink.Kind.COMPARE:
        return reverse("compare") + f"?a={link.kernel.code}&b={link.other_kernel.code}"
    url = reverse("leaderboard", kwargs={"code": link.problem.code})
    return url + (f"?device={link.device_name}" if link.device_name else "")


def _created(request, link, token, back):
    response = render(request, "searches/share/created.html", {
        "link": link, "url": request.build_absolute_uri(reverse("shared", kwargs={"token": token})), "back": back})
    response["Cache-Control"] = "no-store"  # the page holds the only copy of the token
    return response


def _create(request, back: str, **target):
    form = ShareLinkForm(request.POST)
    label = form.cleaned_data["label"] if form.is_valid() else ""
    try:
        link, token = services.share_link_create(user=request.user, label=label, **target)
    except ValidationError as error:
        messages.error(request, f"Could not create the share link: {error_text(error)}")
        return redirect(back)
    return _created(request, link, token, back)


@login_required
@require_POST
def share_search(request, code):
    search = get_object_or_404(Search, code=code)
    return _create(request, reverse("search_detail", kwargs={"code": code}), kind=ShareLink.Kind.SEARCH, search=search)


@login_required
@require_POST
def share_kernel(request, code):
    kernel = get_object_or_404(Kernel, code=code)
    return _create(request, reverse("kernel_detail", kwargs={"code": code}), kind=ShareLink.Kind.KERNEL, kernel=kernel)


@login_required
@require_POST
def share_leaderboard(request, code):
    problem = get_object_or_404(Problem, code=code)
    device = request.POST.get("device", "")[:200]
    back = reverse("leaderboard", kwargs={"code": code})
    return _create(request, back, kind=ShareLink.Kind.LEADERBOARD, problem=problem, device_name=device)


@login_required
@require_POST
def share_compare(request):
    form = CompareForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Could not share: pick two kernels to compare first.")
        return redirect("compare")
    a = get_object_or_404(Kernel, code=form.cleaned_data["a"])
    b = get_object_or_404(Kernel, code=form.cleaned_data["b"])
    back = reverse("compare") + f"?a={a.code}&b={b.code}"
    problem = selectors.kernel_compare_problem(a, b)
    if problem:
        messages.error(request, problem)
        return redirect(back)
    return _create(request, back, kind=ShareLink.Kind.COMPARE, kernel=a, other_kernel=b)


@login_required
@require_POST
def share_revoke(request, pk):
    link = get_object_or_404(ShareLink.objects.select_related("problem", "search", "kernel", "other_kernel"), pk=pk)
    try:
        services.share_link_revoke(link=link, user=request.user)
    except PermissionDenied as error:
        messages.error(request, error_text(error))
    else:
        messages.success(request, "Share link revoked: it no longer opens anything.")
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        back = link_target_url(link)
    return HttpResponseRedirect(back)  # a URL, never a view name for redirect() to resolve


@require_GET
@never_cache
def shared(request, token):
    link = selectors.share_link_by_token(token)
    if link is None:
        raise Http404("This share link does not exist or was revoked.")
    if link.kind == ShareLink.Kind.SEARCH:
        context, template = search_context(link.search, shared=True), "searches/search/shared.html"
    elif link.kind == ShareLink.Kind.KERNEL:
        context, template = kernel_context(link.kernel, shared=True), "searches/kernel/shared.html"
    elif link.kind == ShareLink.Kind.COMPARE:
        context, template = compare_context(link.kernel, link.other_kernel, shared=True), "searches/compare/shared.html"
    else:
        context = leaderboard_context(link.problem, link.device_name, shared=True)
        template = "searches/leaderboard/shared.html"
    context["link"] = link
    response = render(request, template, context)
    response["Referrer-Policy"] = "no-referrer"  # keep the token out of other sites' logs
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response
