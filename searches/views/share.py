"""Share links: create and revoke them on object pages; /s/<token>/ shows the read-only page
to anyone holding the token, without a login, until it is revoked (404 afterwards)."""

import functools

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from lib import gzip_parts

from .. import selectors, services
from ..forms import CompareForm, ShareLinkForm
from ..models import Kernel, Problem, Search, ShareLink, Suite
from .compare import compare_context
from .kernels import kernel_context
from .leaderboards import leaderboard_context
from .searches import TREE_MARKER, error_text, search_context
from .suites import suite_context, suite_export_response, suite_fragment


def link_target_url(link: ShareLink) -> str:
    """The logged-in page a link shows."""
    if link.kind == ShareLink.Kind.SEARCH:
        return reverse("search_detail", kwargs={"code": link.search.code})
    if link.kind == ShareLink.Kind.KERNEL:
        return reverse("kernel_detail", kwargs={"code": link.kernel.code})
    if link.kind == ShareLink.Kind.COMPARE:
        return reverse("compare") + f"?a={link.kernel.code}&b={link.other_kernel.code}"
    if link.kind == ShareLink.Kind.SUITE:
        return reverse("suite_detail", kwargs={"code": link.suite.code})
    url = reverse("leaderboard", kwargs={"code": link.problem.code})
    return url + (f"?device={link.device_name}" if link.device_name else "")


def share_url(request, token: str) -> str:
    """The address to hand out: on KERNELLAB_BASE_URL when set (the request may have come in on an
    internal host such as 127.0.0.1 behind a proxy), else on the host the request came to."""
    path = reverse("shared", kwargs={"token": token})
    base = settings.KERNELLAB_BASE_URL.rstrip("/")
    return base + path if base else request.build_absolute_uri(path)


def _created(request, link, token, back):
    response = render(request, "searches/share/created.html", {
        "link": link, "url": share_url(request, token), "back": back})
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
def share_suite(request, code):
    suite = get_object_or_404(Suite, code=code)
    return _create(request, reverse("suite_detail", kwargs={"code": code}), kind=ShareLink.Kind.SUITE, suite=suite)


@login_required
@require_POST
def share_revoke(request, pk):
    link = get_object_or_404(ShareLink.objects.select_related("problem", "search", "kernel", "other_kernel", "suite"),
                             pk=pk)
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
    link = _live_link(token)
    if link.kind == ShareLink.Kind.SEARCH:
        kernel_url = functools.partial(_shared_kernel_url, token)
        context = search_context(link.search, shared=True, shared_kernel_url=kernel_url)
        template = "searches/search/shared.html"
        context.update({"link": link, "share_token": token})
        return gzip_parts.respond(request, _shared_response(request, template, context), TREE_MARKER,
                                  context["tree_part"])
    elif link.kind == ShareLink.Kind.KERNEL:
        context, template = kernel_context(link.kernel, shared=True), "searches/kernel/shared.html"
    elif link.kind == ShareLink.Kind.COMPARE:
        context, template = compare_context(link.kernel, link.other_kernel, shared=True), "searches/compare/shared.html"
    elif link.kind == ShareLink.Kind.SUITE:
        context = suite_context(link.suite, share_token=token, outcome=request.GET.get("outcome", ""))
        if request.GET.get("fragment"):  # the shared page's live refresh, like the suite page's
            return _shared_headers(suite_fragment(request, context))
        template = "searches/suites/shared.html"
    else:
        context = leaderboard_context(link.problem, link.device_name, shared=True)
        template = "searches/leaderboard/shared.html"
    context.update({"link": link, "share_token": token})
    return _shared_response(request, template, context)


@require_GET
@never_cache
def shared_kernel(request, token, code):
    """A kernel's read-only page, opened through a link that shares it (its search, the board
    it ranks on, a comparison of it); any other kernel is a 404, like a revoked token."""
    link = _live_link(token)
    try:
        kernel = selectors.kernel_by_code(code)
    except Kernel.DoesNotExist:
        kernel = None
    if kernel is None or not selectors.share_link_shows_kernel(link, kernel):
        raise Http404("This kernel is not part of what the link shares.")
    context = kernel_context(kernel, shared=True)
    if kernel.parent is not None and selectors.share_link_shows_kernel(link, kernel.parent):
        context["parent_url"] = _shared_kernel_url(token, kernel.parent.code)
    context.update({"link": link, "share_token": token,
                    "back_url": reverse("shared", kwargs={"token": token})})
    return _shared_response(request, "searches/kernel/shared.html", context)


@require_GET
@never_cache
def shared_suite_export(request, token, fmt):
    """A shared suite's JSON or CSV export; the token of any other kind of link opens none."""
    link = _live_link(token)
    if link.kind != ShareLink.Kind.SUITE:
        raise Http404("This link shares no suite.")
    return _shared_headers(suite_export_response(link.suite, fmt))


def _shared_kernel_url(token: str, code) -> str:
    return reverse("shared_kernel", kwargs={"token": token, "code": code})


def _live_link(token: str) -> ShareLink:
    link = selectors.share_link_by_token(token)
    if link is None:
        raise Http404("This share link does not exist or was revoked.")
    return link


def _shared_response(request, template: str, context: dict):
    return _shared_headers(render(request, template, context))


def _shared_headers(response):
    response["Referrer-Policy"] = "no-referrer"  # keep the token out of other sites' logs
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response
