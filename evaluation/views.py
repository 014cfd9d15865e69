"""The Workers page: evaluation workers with their heartbeats, the job queue of each device, and
what to do when jobs wait with no worker. Its script re-fetches the table with ?fragment=1."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from . import selectors


@login_required
@require_GET
def worker_list(request):
    context = selectors.worker_overview()
    # A query parameter rather than a header, so the two responses never share a cache entry.
    if request.GET.get("fragment"):
        return render(request, "evaluation/workers/_table.html", context)
    return render(request, "evaluation/workers/list.html", context)
