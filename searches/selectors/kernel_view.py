"""A kernel as the browser sees it: one dict, `kernel_view`, behind every view of a kernel. The search
tree (its rows carry it, and new rows are filled from it), the lineage view's rows, the live events'
`kernel.created`/`kernel.updated` payloads and the leaderboard's exports are all built from it, so a
new field is one edit here."""

from searches.models import Kernel, Problem

from .kernels import speed_of_light

# What kernel_view reads: load kernels with `.only(*VIEW_FIELDS)` to view many at once.
VIEW_FIELDS = ("id", "code", "round", "name", "origin", "idea_id", "parent_id", "repair_of_id", "status",
               "reason_code", "reason", "quarantined", "median_ms", "speedup_vs_eager", "speedup_vs_compile",
               "precision", "device_name", "verified", "approved_at", "problem_id")
REASON_CHARS = 300  # a hover's worth; the kernel page has the whole reason


def kernel_view(kernel: Kernel, problem: Problem | None = None) -> dict:
    """Plain data (JSON as is). `problem`: the kernel's, when the caller has it (many kernels, one problem)."""
    return {
        "id": kernel.id,
        "code": str(kernel.code),
        "round": kernel.round,
        "name": kernel.name,
        "origin": kernel.origin,
        "idea_id": kernel.idea_id,
        "parent_id": kernel.parent_id,
        "repair_of_id": kernel.repair_of_id,  # the lineage view hangs a repair under what it repairs
        "status": Kernel.shown(kernel.status, kernel.reason_code),  # a cancelled kernel is grey, not a failure
        "reason": kernel.reason[:REASON_CHARS],
        "quarantined": kernel.quarantined,
        "median_ms": kernel.median_ms,
        "speedup_vs_eager": kernel.speedup_vs_eager,
        "speedup_vs_compile": kernel.speedup_vs_compile,
        "precision": kernel.precision,
        # The problem's floor on this GPU over the median, a fraction; None where it is unknown.
        "speed_of_light": (speed_of_light(problem or kernel.problem, kernel) or {}).get("fraction"),
        "verified": kernel.verified,
        "approved": kernel.approved_at is not None,
    }


def kernel_view_keys() -> tuple[str, ...]:
    """The keys of every kernel_view, in order (the lineage's columns, the exports' extra columns)."""
    return tuple(kernel_view(Kernel(), Problem()))
