"""`python manage.py search PROBLEM`: run a whole search in the foreground, for GPU hosts and scripts.

The same code path as the dashboard: services.search_start, the engine's advance steps (here in
a thread of this process instead of the task queue) and an evaluation worker (here a child
`manage.py evaluator`, started without ANTHROPIC_API_KEY: the key stays with the engine, and the
process that starts sandboxes never holds it). Progress goes to stderr, the final leaderboard to
stdout. Ctrl-C pauses the search; resume it from the dashboard.
"""

import os
import signal
import sys
import time

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from evaluation.models import EvaluationJob
from evaluation.worker import NameInUse, check_name_free, default_name
from proposers import registry
from proposers.registry import capabilities
from searches import selectors, services
from searches.config import SEARCH_CONFIG as CONFIG
from searches.foreground import Engines, EvaluatorChild, problem_for, validated
from searches.models import Device, Kernel, Search


class Command(BaseCommand):
    help = ("Run a kernel search on PROBLEM (a catalog key such as softmax-cpu, a problem code, or an id) in the "
            "foreground and print the leaderboard.")

    # Where this command's default differs from the setting's (searches/config.py), and why: a search run
    # from a shell takes the problem's own device, and the LLM when this process holds its key.
    DEFAULT_OVERRIDES = {"device": None, "proposer": None}

    def add_arguments(self, parser):
        parser.add_argument("problem", help="catalog key, problem code (UUID) or id")
        keyed = ", ".join(f"{name} when {capabilities(name).api_key} is set" for name in registry.names(offline=False))
        CONFIG.add_arguments(parser, defaults=self.DEFAULT_OVERRIDES,
                             choices={"device": Device.values, "proposer": Search.Proposer.values},
                             helps={"device": "target device (default: the problem's)",
                                    "proposer": f"default: {keyed}, else {CONFIG.proposer.default}",
                                    "model": f"LLM model (default {settings.ANTHROPIC_MODEL})",
                                    "name": "a name for the search (default: headless PROBLEM)"})
        parser.add_argument("--pool-size", type=int, default=None, help="warm sandboxes (default RUNNER_POOL_SIZE)")
        parser.add_argument("--top", type=int, default=10, help="leaderboard rows to print (default 10)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, **opts):
        problem = problem_for(opts["problem"], self.stderr.write)
        device = opts["device"] or problem.device
        proposer = opts["proposer"] or next((name for name in registry.names(offline=False)
                                             if os.environ.get(capabilities(name).api_key)), CONFIG.proposer.default)
        worker = EvaluatorChild(name=default_name(device) + "-search", device=device,
                                pool_size=settings.RUNNER_POOL_SIZE if opts["pool_size"] is None else opts["pool_size"])
        try:
            check_name_free(worker.name)
        except NameInUse as error:
            raise CommandError(f"{error} (another `manage.py search` on this host and device)") from None
        progress = Progress(enabled=not opts["no_progress"], stream=sys.stderr)
        # SIGTERM (systemd, a scheduler) stops the command like Ctrl-C: the search is paused.
        signal.signal(signal.SIGTERM, _interrupt)
        with worker:
            self._run(problem, device, proposer, worker, progress, opts)

    def _run(self, problem, device, proposer, worker, progress, opts):
        problem = validated(problem, worker, self.stderr.write)
        with Engines() as engine:
            try:
                values = CONFIG.from_options(opts)
                values.update(proposer=proposer, device=device, name=opts["name"] or f"headless {problem.name}")
                search = services.search_start(problem=problem, user=None, **values)
            except ValidationError as error:
                raise CommandError(" ".join(error.messages)) from None
            engine.start(search.id)
            self.stderr.write(f"search {search.code} on {problem} ({proposer}, {device}): "
                              f"R={search.rounds} B={search.parents_per_round} I={search.ideas_per_parent} "
                              f"K={search.kernels_per_idea}")
            interrupted = False
            try:
                # A dead orchestrator thread ends the wait too: nothing would advance the search.
                worker.wait(lambda: _search_done(search.id, progress) or engine.died())
            except KeyboardInterrupt:
                interrupted = True
                self._pause(search)
        progress.close()
        search.refresh_from_db()
        self._report(search, opts["top"])
        if interrupted:
            self.stderr.write("Interrupted: the search is paused; resume it from the dashboard "
                              "(with `manage.py qcluster` and `manage.py evaluator` running).")
            sys.exit(130)
        if search.status != Search.Status.COMPLETED:
            sys.exit(1)

    # --- steps ---------------------------------------------------------------------------------

    def _pause(self, search: Search) -> None:
        search.refresh_from_db()
        if search.status in Search.ACTIVE:
            services.search_pause(search=search, user=None)

    def _report(self, search: Search, top: int) -> None:
        counts = selectors.search_counts(search=search)
        board = selectors.search_leaderboard(search=search, limit=top)
        out = self.stdout
        out.write("")
        out.write(f"Search {search.code}: {search.status} — {search.stop_reason}")
        out.write(f"tree: {sum(counts.values())} kernels ({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))}), "
                  f"{search.ideas.count()} ideas, {search.current_round} round(s); "
                  f"tokens {search.tokens_in}+{search.tokens_out}, cost ${search.cost_usd:.4f}")
        baseline = search.problem.baseline
        if baseline:
            out.write(f"baseline: eager {_ms(baseline.get('eager_ms'))}, torch.compile {_ms(baseline.get('compile_ms'))}")
        if not board:
            out.write("No correct kernel.")
            return
        header = f"{'#':>3} {'kernel':>7} {'round':>5} {'origin':<9} {'median':>11} {'vs eager':>9} {'vs compile':>10}  idea / name"
        out.write(header)
        out.write("-" * len(header))
        for rank, kernel in enumerate(board, 1):
            flag = (" [quarantined]" if kernel.quarantined else "") + (" [verified rerun]" if kernel.verified else "")
            label = (kernel.idea.title if kernel.idea_id else kernel.name) + flag
            out.write(f"{rank:>3} {kernel.id:>7} {kernel.round:>5} {kernel.origin:<9} {_ms(kernel.median_ms):>11} "
                      f"{_x(kernel.speedup_vs_eager):>9} {_x(kernel.speedup_vs_compile):>10}  {label[:60]}")
        run = selectors.kernel_primary_run(selectors.kernel_runs(kernel=board[0]))
        paired = ((run.result or {}).get("paired") if run else None) or {}
        if paired.get("speedup") and not paired.get("dropped"):  # CPU: eager timed between the kernel's blocks
            lo, hi = paired["speedup_ci95"]
            out.write(f"best vs eager: {_x(paired['speedup'])} (95% CI {lo:.2f}–{hi:.2f}x), eager "
                      f"{_ms(paired['eager_ms'])} timed in {paired['blocks']} blocks between the kernel's")
        out.write("load average: " + " ".join(f"{v:.2f}" for v in os.getloadavg()))


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _search_done(search_id: int, progress) -> bool:
    search = Search.objects.get(pk=search_id)
    # Search candidates, then the verified reruns of the elites queued at completion.
    pending = EvaluationJob.objects.filter(kernel__search_id=search_id, status__in=EvaluationJob.UNFINISHED).count()
    progress.show(search, pending)
    return search.status not in Search.ACTIVE and pending == 0


class Progress:
    """A one-line progress bar on stderr: round, candidates evaluated out of those planned, best time."""

    def __init__(self, *, enabled: bool, stream):
        self.enabled = enabled and stream.isatty()
        self.plain = enabled and not self.enabled  # not a terminal: a line now and then
        self.stream = stream
        self._last = 0.0
        self._last_line = ""

    def show(self, search: Search, pending: int) -> None:
        now = time.monotonic()
        if now - self._last < (0.3 if self.enabled else 10.0):
            return
        self._last = now
        planned = 1 + search.rounds * search.parents_per_round * search.ideas_per_parent * search.kernels_per_idea
        if search.max_candidates:
            planned = min(planned, search.max_candidates)
        done = search.candidates_evaluated
        best = Kernel.objects.filter(search=search).ranked().order_by("median_ms").first()
        width = 30
        filled = min(width, int(width * done / max(planned, 1)))
        line = (f"round {search.current_round}/{search.rounds} [{'#' * filled}{'.' * (width - filled)}] "
                f"{done}/{planned} evaluated, {pending} queued"
                + (f", best {_ms(best.median_ms)} ({_x(best.speedup_vs_eager)} vs eager)" if best else ""))
        if self.enabled:
            self.stream.write("\r" + line.ljust(len(self._last_line)))
            self.stream.flush()
        elif self.plain and line != self._last_line:
            self.stream.write(line + "\n")
        self._last_line = line

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")


def _ms(value) -> str:
    return f"{value:.4g} ms" if value is not None else "-"


def _x(value) -> str:
    return f"{value:.2f}x" if value is not None else "-"

