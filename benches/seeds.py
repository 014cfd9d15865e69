"""The seed problems' benchmark (`manage.py bench_seeds`): playbook searches on several problems at
once through one evaluator, as users would start them, and one row per problem from what was
stored: the best kernel, its median with the 95% CI, its speedups, its share of the speed of
light, the precision it used, and how much search it took."""

import os
import time

from django.utils import timezone

from benches import throughput
from searches import selectors, services
from searches.foreground import Engines, EvaluatorChild
from searches.models import Problem, Search

GPU_SEEDS = ("softmax-4096x65536", "layernorm-16x64x256x256", "matmul-4096x4096", "conv2d-100x3x224x224",
             "conv-relu-maxpool-100x3x224x224")
CPU_SEEDS = ("softmax-cpu", "layernorm-cpu", "gelu-cpu")
# The settings the benchmark varies (searches/config.py), and where its defaults differ from a search's:
# three rounds, the tree shape docs/BENCHMARKS.md and scripts/gpu_seeds.sh report as its own.
SHAPE = ("rounds", "parents_per_round", "ideas_per_parent", "kernels_per_idea")
SHAPE_DEFAULTS = {"rounds": 3}


def run(*, problems: list[Problem], worker: EvaluatorChild, shape: dict, max_seconds: float) -> list[Search]:
    """One playbook search per problem, all started at once, until each is done (its verified reruns
    judged too) or `max_seconds` pass; those still running are then paused."""
    began = time.monotonic()
    with Engines() as engines:
        searches = [services.search_start(problem=problem, user=None, proposer="playbook", device=worker.device,
                                          name=f"seed benchmark: {problem.name}", **shape) for problem in problems]
        for search in searches:
            engines.start(search.id)
        worker.wait(lambda: time.monotonic() - began > max_seconds or all(throughput.finished(s.id) for s in searches)
                    or engines.died())
        for search in searches:
            search.refresh_from_db()
            if search.status in Search.ACTIVE:
                services.search_pause(search=search, user=None)
    return searches


def row(search: Search) -> dict:
    """What the table and the JSON say of one search."""
    problem = search.problem
    baseline = problem.baseline or {}
    board = [k for k in selectors.search_leaderboard(search=search, limit=5) if selectors.kernel_is_ranked(k)]
    out = {"problem": problem.catalog_key or problem.name, "status": search.status, "stop_reason": search.stop_reason,
           "eager_ms": baseline.get("eager_ms"), "compile_ms": baseline.get("compile_ms"),
           "candidates": search.candidates_evaluated, "rounds": search.current_round,
           "kernels": sum(selectors.search_counts(search=search).values()),
           "wall_s": round(((search.finished_at or timezone.now()) - search.started_at).total_seconds(), 1),
           "date": timezone.now().date().isoformat(), "load_average": [round(v, 2) for v in os.getloadavg()],
           "best_ms": None}
    if not board:
        return out
    best = board[0]
    run = selectors.kernel_primary_run(selectors.kernel_runs(kernel=best))
    result = (run.result or {}) if run else {}
    sol = selectors.speed_of_light(problem, best) or {}
    paired = result.get("paired") or {}
    out.update({
        "gpu": best.device_name, "best_kernel": best.idea.title if best.idea_id else best.name,
        "best_kernel_code": str(best.code), "best_ms": best.median_ms,
        "ci95_ms": (result.get("timing") or {}).get("ci95_ms"),
        "speedup_vs_eager": best.speedup_vs_eager, "speedup_vs_compile": best.speedup_vs_compile,
        "speed_of_light": sol.get("fraction"), "precision": best.precision,
    })
    if paired.get("speedup") and not paired.get("dropped"):  # CPU: eager timed between the kernel's blocks
        out["paired_speedup_vs_eager"] = paired["speedup"]
        out["paired_ci95"] = paired["speedup_ci95"]
    return out


def table(rows: list[dict]) -> list[str]:
    header = (f"{'problem':<32} {'best kernel':<40} {'median ms [95% CI]':<26} {'x eager':>8} {'x compile':>9} "
              f"{'SoL':>5} {'precision':<9} {'cand.':>5} {'rounds':>6} {'wall s':>7}")
    lines = [header, "-" * len(header)]
    for r in rows:
        if r["best_ms"] is None:
            lines.append(f"{r['problem']:<32} no correct kernel ({r['status']}: {r['stop_reason']})")
            continue
        ci = r.get("ci95_ms")
        median = f"{r['best_ms']:.4f}" + (f" [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "")
        eager = _x(r.get("paired_speedup_vs_eager") or r["speedup_vs_eager"])
        sol = f"{100 * r['speed_of_light']:.0f}%" if r.get("speed_of_light") is not None else "-"
        lines.append(f"{r['problem']:<32} {r['best_kernel'][:40]:<40} {median:<26} {eager:>8} "
                     f"{_x(r['speedup_vs_compile']):>9} {sol:>5} {r['precision'] or '-':<9} {r['candidates']:>5} "
                     f"{r['rounds']:>6} {r['wall_s']:>7.1f}")
        if r.get("paired_ci95"):
            lo, hi = r["paired_ci95"]
            lines.append(f"{'':<32} vs eager paired block by block: 95% CI {lo:.2f}-{hi:.2f}x")
    lines.append("load average: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    return lines


def _x(value) -> str:
    return f"{value:.2f}x" if value is not None else "-"
