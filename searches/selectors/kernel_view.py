"""A kernel as the browser sees it: one dict, `kernel_view`, behind every view of a kernel. The search
tree (its rows carry it, and new rows are filled from it), the lineage view's rows, the live events'
`kernel.created`/`kernel.updated` payloads and the leaderboard's exports are all built from it, so a
new field is one edit here."""

from searches.models import Kernel, Problem

from .kernels import speed_of_light

# What kernel_view reads: view many kernels at once from `.values(*VIEW_FIELDS)`.
VIEW_FIELDS = ("id", "code", "round", "name", "origin", "idea_id", "parent_id", "repair_of_id", "status",
               "reason_code", "reason", "quarantined", "median_ms", "speedup_vs_eager", "speedup_vs_compile",
               "precision", "device_name", "verified", "approved_at")
REASON_CHARS = 300  # a hover's worth; the kernel page has the whole reason


def kernel_view(kernel, problem: Problem | None = None) -> dict:
    """Plain data (JSON as is). `kernel`: a Kernel, or a dict of its VIEW_FIELDS (`.values(*VIEW_FIELDS)`:
    many kernels without building a model for each). `problem`: the kernel's, when the caller has it."""
    get = kernel.get if isinstance(kernel, dict) else (lambda name: getattr(kernel, name))
    return {
        "id": get("id"),
        "code": str(get("code")),
        "round": get("round"),
        "name": get("name"),
        "origin": get("origin"),
        "idea_id": get("idea_id"),
        "parent_id": get("parent_id"),
        "repair_of_id": get("repair_of_id"),  # the lineage view hangs a repair under what it repairs
        "status": Kernel.shown(get("status"), get("reason_code")),  # a cancelled kernel is grey, not a failure
        "reason": get("reason")[:REASON_CHARS],
        "quarantined": get("quarantined"),
        "median_ms": get("median_ms"),
        "speedup_vs_eager": get("speedup_vs_eager"),
        "speedup_vs_compile": get("speedup_vs_compile"),
        "precision": get("precision"),
        # The problem's floor on this GPU over the median, a fraction; None where it is unknown.
        "speed_of_light": (speed_of_light(problem or kernel.problem, kernel) or {}).get("fraction"),
        "verified": get("verified"),
        "approved": get("approved_at") is not None,
    }


def kernel_view_keys() -> tuple[str, ...]:
    """The keys of every kernel_view, in order (the lineage's columns, the exports' extra columns)."""
    return tuple(kernel_view(Kernel(), Problem()))
