"""Leaderboards: per problem *version* (an exact program: versions of a lineage may change
shapes or tolerances, so their timings do not compare) and per GPU model (device_name).

A board has one row per distinct kernel source: a fork copies its ancestors' kernels with their
verdicts, and the same source ranked three times would only push real entries down."""

import hashlib

from django.db.models import Max

from searches.models import BenchmarkRun, Kernel, Problem, Verdict

from .kernel_view import kernel_view
from .kernels import kernel_is_ranked, speed_of_light
from .speedups import best_key, best_order, ranks_by_paired, with_baselines

PLAYBOOK_ORIGIN = "playbook: built-in hand-written kernels (no AI)"


def leaderboard_devices(*, problem) -> list[str]:
    return list(Kernel.objects.filter(problem=problem, status=Verdict.CORRECT).exclude(device_name="")
                .values_list("device_name", flat=True).distinct().order_by("device_name"))


def kernel_source_key(source: str) -> str:
    """Trailing spaces and blank edges do not make a different kernel."""
    text = "\n".join(line.rstrip() for line in (source or "").strip().splitlines())
    return hashlib.sha256(text.encode()).hexdigest()


def kernel_origin_label(kernel: Kernel) -> str:
    """Where a kernel came from, in a reader's words: the model, the playbook or a person."""
    origin, search = kernel.origin, kernel.search if kernel.search_id else None
    by_llm = search is not None and search.capabilities.llm
    model = (search.model if search else "") or "LLM"
    if origin == Kernel.Origin.LLM:
        return model
    if origin == Kernel.Origin.PLAYBOOK:
        return PLAYBOOK_ORIGIN
    if origin == Kernel.Origin.USER:
        return "hand-written"
    if origin == Kernel.Origin.SEED:
        return "starting kernel"
    if origin == Kernel.Origin.REPAIR:
        return f"{model} (repair)" if by_llm else "playbook (repair)"
    return "forked copy"


def leaderboard_references(*, problem, device_name: str) -> list[dict]:
    """PyTorch eager and torch.compile on this GPU, from the newest run that timed them there."""
    run = (BenchmarkRun.objects.filter(kernel__problem=problem, device_name=device_name).exclude(baseline=None)
           .order_by("-created_at", "-id").only("baseline").first())
    baseline = (run.baseline if run else None) or (problem.baseline if not device_name else {})
    refs = []
    if baseline.get("eager_ms"):
        refs.append({"label": "PyTorch eager", "median_ms": baseline["eager_ms"]})
    if baseline.get("compile_ms"):
        mode = baseline.get("compile_mode")
        refs.append({"label": "torch.compile" + (f" ({mode})" if mode else ""), "median_ms": baseline["compile_ms"]})
    return refs


def _distinct_by_source(kernels, device: str) -> list[Kernel]:
    """One kernel per source, in the given (best-first, `speedups`) order. A group's row is its best
    kernel that is not a fork's copy (the original), carrying the group's other members as
    `copies`; only-copies groups (the original was deleted) keep their best copy."""
    groups: dict[str, list[Kernel]] = {}
    for kernel in kernels:
        groups.setdefault(kernel_source_key(kernel.source), []).append(kernel)
    rows = []
    for members in groups.values():
        head = next((k for k in members if k.origin != Kernel.Origin.FORK), members[0])
        head.copies = [k for k in members if k is not head]
        head.origin_label = kernel_origin_label(head)
        rows.append(head)
    rows.sort(key=best_key(device))
    return rows


def _board_rows(ranked: list[Kernel], references: list[dict], device: str) -> list[dict]:
    """Ranked kernels with the reference times slotted in where they fall; references get no rank.
    On the CPU the ranking is by paired speedup, which the references' medians, timed at another
    moment, do not place: they follow the ranking."""
    rows = [{"kind": "kernel", "rank": rank, "kernel": k, "median_ms": k.median_ms}
            for rank, k in enumerate(ranked, start=1)]
    references = [{"kind": "reference", **ref} for ref in references]
    if ranks_by_paired(device):
        return rows + references
    rows += references
    rows.sort(key=lambda row: (row["median_ms"], row["kind"] == "kernel"))
    return rows


def leaderboard(*, problem, device_name: str = "", limit: int = 50) -> list[dict]:
    """One board per GPU model (never mixed): ranked entries with eager and torch.compile as
    unranked reference rows, then quarantined kernels waiting for a verified rerun and an
    approval, shown outside the ranking."""
    devices = [device_name] if device_name else leaderboard_devices(problem=problem)
    boards = []
    for device in devices:
        correct = (Kernel.objects.filter(problem=problem, status=Verdict.CORRECT, device_name=device)
                   .exclude(median_ms=None)
                   .select_related("search", "search__created_by", "search__forked_from", "author", "approved_by")
                   .order_by(*best_order(problem.device)))
        ranked, waiting = [], []
        for kernel in with_baselines(_distinct_by_source(correct[: limit * 8], problem.device)):
            kernel.sol = speed_of_light(problem, kernel)
            kernel.view = kernel_view(kernel, problem)
            kernel.slower_than_eager = kernel.speedup_vs_eager is not None and kernel.speedup_vs_eager < 1
            if kernel_is_ranked(kernel):
                if len(ranked) < limit:
                    ranked.append(kernel)
            elif len(waiting) < limit:
                waiting.append(kernel)
        references = leaderboard_references(problem=problem, device_name=device)
        boards.append({"device_name": device, "paired": ranks_by_paired(problem.device), "ranked": ranked, "quarantined": waiting, "references": references,
                       "rows": _board_rows(ranked, references, problem.device)})
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
    """The kernel's view (kernel_view.py), then the export's own columns: where both name a key (`name`,
    `origin`), the export keeps its wording (the name as shown, the origin's label)."""
    who = kernel.author or (kernel.search.created_by if kernel.search_id else None)
    return {
        **kernel.view,
        "rank": rank, "device_name": device_name, "kernel": str(kernel.code), "name": str(kernel),
        "median_ms": kernel.median_ms, "speedup_vs_eager": kernel.speedup_vs_eager,
        "baseline": kernel.baseline, "baseline_eager_ms": kernel.eager_ms,
        "speedup_vs_compile": kernel.speedup_vs_compile, "precision": kernel.precision,
        "speed_of_light": (kernel.sol or {}).get("fraction"),
        "verified_rerun": kernel.verified, "quarantined": kernel.quarantined,
        "approved": kernel.approved_by_id is not None,
        "search": str(kernel.search.code) if kernel.search_id else None,
        "origin": kernel.origin_label, "copies": len(kernel.copies),
        "slower_than_eager": kernel.slower_than_eager,
        "ran_by": who.get_username() if who else "",
        "evaluated_at": kernel.evaluated_at.isoformat() if kernel.evaluated_at else None,
    }


def leaderboard_problems():
    """Problems that have at least one correct kernel, with their best time."""
    return (Problem.objects.filter(kernels__status=Verdict.CORRECT).annotate(last=Max("kernels__evaluated_at"))
            .distinct().order_by("name", "-version"))
