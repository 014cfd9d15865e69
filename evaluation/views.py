"""The Workers page: evaluation workers with their heartbeats, the job queue of each device (each
count opening the list of its jobs), and what to do when jobs wait with no worker. Its script re-fetches
the table with ?fragment=1."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from . import selectors
from .models import Device


@login_required
@require_GET
def worker_list(request):
    context = selectors.worker_overview()
    # A query parameter rather than a header, so the two responses never share a cache entry.
    if request.GET.get("fragment"):
        return render(request, "evaluation/workers/_table.html", context)
    return render(request, "evaluation/workers/list.html", context)


@login_required
@require_GET
def job_list(request, device, state):
    """The jobs behind one count of the Workers page's queue summary."""
    labels = dict(Device.choices)
    if device not in labels or state not in selectors.JOB_STATES:
        raise Http404("No such list of jobs.")
    return render(request, "evaluation/workers/jobs.html", {
        "jobs": selectors.job_list(device=device, state=state), "device_label": labels[device], "state": state,
        "limit": selectors.JOB_LIST_LIMIT})
