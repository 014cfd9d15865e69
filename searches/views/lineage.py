"""The lineage view: a search's kernels as a picture (static/js/lineage.js draws it), kept live
over the search's websocket. The text tree on the search page stays the accessible view."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.gzip import gzip_page

from live import events as live_events

from .. import selectors
from ..lineage import search_lineage
from ..models import Search

ZERO = "00000000-0000-0000-0000-000000000000"


@login_required
@gzip_page
def search_lineage_view(request, code):
    search = get_object_or_404(Search.objects.select_related("problem"), code=code)
    seq = live_events.last_seq(live_events.SEARCH, search.id)  # read before the rows: the replay may repeat, never miss
    config = {
        "seq": seq, "ws": f"/ws/searches/{search.code}/",
        "kernel_url": reverse("kernel_detail", kwargs={"code": ZERO}), "compare_url": reverse("compare"),
        "paired": selectors.ranks_by_paired(search.device),  # how the best kernel is chosen (selectors/speedups.py)
        **search_lineage(search=search),
    }
    return render(request, "searches/lineage/detail.html", {"search": search, "problem": search.problem,
                                                           "lineage": config})
