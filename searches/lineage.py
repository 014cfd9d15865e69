"""The lineage of a search as compact rows for the lineage view's script (static/js/lineage.js).

One query for kernels and one for ideas; rows are lists, not objects, so a 2,000-kernel search
is a few hundred KB of JSON. A kernel's row is its `kernel_view` (selectors/kernel_view.py), the
dict its live events carry, as a list in the order of `kernel_columns`. The script draws the picture
and keeps it live; the layout is not computed here because live events add nodes the server never laid out."""

from .models import Idea, Kernel, Search
from .selectors.kernel_view import VIEW_FIELDS, kernel_view, kernel_view_keys

IDEA_COLUMNS = ("id", "parent_kernel_id", "round", "title", "origin")


def search_lineage(*, search: Search) -> dict:
    columns = kernel_view_keys()
    kernels = Kernel.objects.filter(search=search).order_by("id").values(*VIEW_FIELDS)
    rows = [[view[c] for c in columns] for view in (kernel_view(k, search.problem) for k in kernels)]
    ideas = [list(i) for i in Idea.objects.filter(search=search).order_by("id").values_list(*IDEA_COLUMNS)]
    return {"kernel_columns": columns, "kernels": rows, "idea_columns": IDEA_COLUMNS, "ideas": ideas}
