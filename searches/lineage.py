"""The lineage of a search as compact rows for the lineage view's script (static/js/lineage.js).

One query for kernels and one for ideas; rows are lists, not objects, so a 2,000-kernel search
is a few hundred KB of JSON. The script draws the picture and keeps it live; the layout is
not computed here because live events add nodes the server never laid out."""

from .models import Idea, Kernel, Search

# Column order of a kernel row; the script reads the same list from the payload.
KERNEL_COLUMNS = ("id", "code", "parent_id", "idea_id", "repair_of_id", "round", "name", "status", "reason",
                  "quarantined", "median_ms", "speedup_vs_eager", "speedup_vs_compile", "verified", "approved",
                  "origin")
IDEA_COLUMNS = ("id", "parent_kernel_id", "round", "title", "origin")
REASON_CHARS = 300  # a hover's worth; the kernel page has the whole reason


def search_lineage(*, search: Search) -> dict:
    kernels = Kernel.objects.filter(search=search).order_by("id").values_list(
        "id", "code", "parent_id", "idea_id", "repair_of_id", "round", "name", "status", "reason", "quarantined",
        "median_ms", "speedup_vs_eager", "speedup_vs_compile", "verified", "approved_at", "origin", "reason_code")
    rows = []
    for row in kernels:
        row = list(row)
        row[7] = Kernel.shown(row[7], row.pop())  # a cancelled kernel is grey, not a failure
        row[1] = str(row[1])
        row[8] = row[8][:REASON_CHARS]
        row[14] = row[14] is not None  # approved: the script needs only whether
        rows.append(row)
    ideas = [list(i) for i in Idea.objects.filter(search=search).order_by("id").values_list(*IDEA_COLUMNS)]
    return {"kernel_columns": KERNEL_COLUMNS, "kernels": rows, "idea_columns": IDEA_COLUMNS, "ideas": ideas}
