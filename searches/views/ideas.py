"""The Ideas page: what the team's ideas achieved, by technique and op family, from the searches the viewer
may see (searches/selectors/ideas.py; the arithmetic in memory/bank.py)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from .. import selectors


def _filters(request) -> dict:
    return {"device_model": request.GET.get("device", "")[:200], "model": request.GET.get("model", "")[:100]}


@login_required
def idea_bank(request):
    filters = _filters(request)
    table = selectors.bank_table(user=request.user, **filters)
    return render(request, "searches/ideas/index.html", {**table, **filters})


@login_required
def idea_bank_kernels(request):
    filters = _filters(request)
    technique, family = request.GET.get("technique", "")[:32], request.GET.get("family", "")[:50]
    kernels = selectors.bank_cell_kernels(user=request.user, technique=technique, family=family, **filters)
    return render(request, "searches/ideas/kernels.html",
                  {"kernels": kernels, "technique": technique, "family": family, **filters})
