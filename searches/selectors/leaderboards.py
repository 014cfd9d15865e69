"""Leaderboards: per problem *version* (an exact program: versions of a lineage may change
shapes or tolerances, so their timings do not compare) and per GPU model (device_name)."""

from django.db.models import Max

from searches.models import Kernel, Problem, Verdict

from .kernels import kernel_is_ranked, speed_of_light


def leaderboard_devices(*, problem) -> list[str]:
    return list(Kernel.objects.filter(problem=problem, status=Verdict.CORRECT).exclude(device_name="")
                .values_list("device_name", flat=True).distinct().order_by("device_name"))


def leaderboard(*, problem, device_name: str = "", limit: int = 50) -> list[dict]:
    """One board per GPU model (never mixed): ranked entries, then quarantined kernels waiting
    for a verified rerun and an approval, shown outside the ranking."""
    devices = [device_name] if device_name else leaderboard_devices(problem=problem)
    boards = []
    for device in devices:
        correct = (Kernel.objects.filter(problem=problem, status=Verdict.CORRECT, device_name=device)
                   .exclude(median_ms=None).select_related("search", "search__created_by", "author", "approved_by")
                   .order_by("median_ms", "id"))
        ranked, waiting = [], []
        for kernel in correct[: limit * 4]:
            kernel.sol = speed_of_light(problem, kernel)
            if kernel_is_ranked(kernel):
                if len(ranked) < limit:
                    ranked.append(kernel)
            elif len(waiting) < limit:
                waiting.append(kernel)
        boards.append({"device_name": device, "ranked": ranked, "quarantined": waiting})
    return boards


def leaderboard_rows(boards: list[dict]) -> list[dict]:
    """Flat rows for the JSON/CSV exports."""
    rows = []
    for board in boards:
        for rank, kernel in enumerate(board["ranked"], start=1):
            rows.append(_leaderboard_row(kernel, board["device_name"], rank))
        for kernel in board["quarantined"]:
            rows.append(_leaderboard_row(kernel, board["device_name"], None))
    return rows


def _leaderboard_row(kernel: Kernel, device_name: str, rank: int | None) -> dict:
    who = kernel.author or (kernel.search.created_by if kernel.search_id else None)
    return {
        "rank": rank, "device_name": device_name, "kernel": str(kernel.code), "name": str(kernel),
        "median_ms": kernel.median_ms, "speedup_vs_eager": kernel.speedup_vs_eager,
        "speedup_vs_compile": kernel.speedup_vs_compile, "precision": kernel.precision,
        "speed_of_light": (kernel.sol or {}).get("fraction"),
        "verified_rerun": kernel.verified, "quarantined": kernel.quarantined,
        "approved": kernel.approved_by_id is not None,
        "search": str(kernel.search.code) if kernel.search_id else None,
        "ran_by": who.get_username() if who else "",
        "evaluated_at": kernel.evaluated_at.isoformat() if kernel.evaluated_at else None,
    }


def leaderboard_problems():
    """Problems that have at least one correct kernel, with their best time."""
    return (Problem.objects.filter(kernels__status=Verdict.CORRECT).annotate(last=Max("kernels__evaluated_at"))
            .distinct().order_by("name", "-version"))
