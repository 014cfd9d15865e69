"""`python manage.py bench_evaluator`: candidates judged per minute, through the product's own path.

By default on a temporary SQLite file (the user's data is never touched): this command runs itself
again as a child with DATABASE_URL and RUNNER_DEVICE set, migrates that database, loads the catalog
problem, validates it as an EvaluationJob, then runs a playbook search (or, with --load-inline N, N
user-submitted load_inline kernels; with --searches K as well, the searches first, then the kernels)
with one child `manage.py evaluator`, and prints a table per window.
"""

import json
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from benches import throughput
from searches.foreground import problem_for, validated
from benches.harness import bench_worker, rerun_on_database
from searches.models import Device

DEFAULT_PROBLEM = {"cuda": "softmax-4096x65536", "cpu": "softmax-cpu"}


class Command(BaseCommand):
    help = "Measure candidates judged per minute through a real search, evaluator and sandboxes."

    def add_arguments(self, parser):
        parser.add_argument("--device", choices=Device.values, default=settings.RUNNER_DEVICE,
                            help=f"default RUNNER_DEVICE, now {settings.RUNNER_DEVICE!r}")
        parser.add_argument("--problem", default="",
                            help="catalog key, code or id (default softmax-4096x65536 on cuda, softmax-cpu on cpu)")
        parser.add_argument("--candidates", type=int, default=30, help="each search's candidate budget (default 30)")
        parser.add_argument("--searches", type=int, default=None,
                            help="playbook searches started at once, as several users would (default 1; "
                                 "none with --load-inline unless given)")
        parser.add_argument("--load-inline", type=int, default=0, metavar="N",
                            help="N distinct load_inline softmax kernels, after the searches if --searches is given")
        parser.add_argument("--no-cached-pass", action="store_true",
                            help="with --load-inline: skip the second pass (the same N kernels again, built once)")
        parser.add_argument("--max-seconds", type=float, default=600.0,
                            help="close the window after this long, judged or not (default 600)")
        parser.add_argument("--jobs-in-flight", type=int, default=None, help="default RUNNER_JOBS_IN_FLIGHT")
        parser.add_argument("--pool-size", type=int, default=None, help="default RUNNER_POOL_SIZE")
        parser.add_argument("--json", default="", help="also write the report to this file")
        parser.add_argument("--database", default="",
                            help="a DATABASE_URL to use instead of a temporary SQLite file (not migrated)")
        parser.add_argument("--here", action="store_true", help="(internal) run in this process's database")

    def handle(self, *args, **opts):
        if not opts["here"]:
            sys.exit(self._in_child(opts))
        device = opts["device"]
        problem_key = opts["problem"] or DEFAULT_PROBLEM[device]
        if opts["load_inline"] and not problem_key.startswith("softmax"):
            self.stderr.write("note: the load_inline kernels are row softmaxes; other problems reject them")
        worker = bench_worker("bench_evaluator", "bench", device, opts["pool_size"], opts["jobs_in_flight"])
        pool_size, jobs_in_flight = worker.pool_size, worker.jobs_in_flight
        quick = min(jobs_in_flight, settings.RUNNER_QUICK_JOBS_IN_FLIGHT)  # what the child evaluator reads too
        with worker:
            problem = validated(problem_for(problem_key, self.stderr.write), worker, self.stderr.write)
            self.stderr.write(f"Judging on {device}: jobs in flight {jobs_in_flight} ({quick} without a long build), "
                              f"pool size {pool_size}…")
            windows = []
            searches = opts["searches"] if opts["searches"] is not None else (0 if opts["load_inline"] else 1)
            if searches:
                windows.append(("search" if searches == 1 else f"{searches} searches",
                                throughput.run_search(problem=problem, worker=worker, candidates=opts["candidates"],
                                                      max_seconds=opts["max_seconds"], searches=searches)))
            if opts["load_inline"]:
                if windows:  # a paused search's queued candidates are still judged: not inside the next window
                    throughput.drain(windows[-1][1], worker)
                sources = throughput.load_inline_sources(device=device, count=opts["load_inline"])
                passes = ["load_inline"] + ([] if opts["no_cached_pass"] else ["load_inline, cached"])
                for mode in passes:  # the second time, every build comes from the cache
                    windows.append((mode, throughput.run_load_inline(problem=problem, worker=worker, sources=sources,
                                                                     max_seconds=opts["max_seconds"])))
        reports = [throughput.measure(**window, settings={
            "mode": mode, "device": device, "jobs_in_flight": jobs_in_flight, "quick_jobs_in_flight": quick,
            "pool_size": pool_size, "max_seconds": opts["max_seconds"],
            "requested": opts["candidates"] if mode.endswith(("search", "searches")) else opts["load_inline"]})
            for mode, window in windows]
        for report in reports:
            for line in throughput.table(report):
                self.stdout.write(line)
        search = reports.pop(0) if searches else None
        load_inline = None
        if reports:
            load_inline = reports[0]
            if len(reports) == 2:
                load_inline = {**reports[0], "cached_pass": reports[1],
                               "contention": throughput.contention(reports[0], reports[1])}
                self.stdout.write(f"contention: {load_inline['contention']}")
        # one workload: its report; both: each under its name
        report = {"search": search, "load_inline": load_inline} if search and load_inline else search or load_inline
        if opts["json"]:
            Path(opts["json"]).write_text(json.dumps(report, indent=2, default=str) + "\n")

    def _in_child(self, opts) -> int:
        arguments = ["--device", opts["device"], "--candidates", str(opts["candidates"]),
                     "--load-inline", str(opts["load_inline"]), "--max-seconds", str(opts["max_seconds"])]
        if opts["searches"] is not None:
            arguments += ["--searches", str(opts["searches"])]
        if opts["no_cached_pass"]:
            arguments.append("--no-cached-pass")
        for name in ("problem", "jobs_in_flight", "pool_size", "json"):
            if opts[name] not in ("", None):
                arguments += [f"--{name.replace('_', '-')}", str(opts[name])]
        return rerun_on_database("bench_evaluator", arguments, opts["device"], opts["database"])
