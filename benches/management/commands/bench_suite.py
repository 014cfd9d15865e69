"""`python manage.py bench_suite`: a KernelBench level through the worker path, resumable.

    python manage.py bench_suite --device cuda --limit 25 --json docs/benchmarks/level1-h200.json

On a temporary SQLite file by default (or `--database URL`, migrated first), as bench_evaluator:
the level's files are imported into a suite, then up to --limit problems not yet done in the JSON
(those whose family the playbook knows first) are validated by a child `manage.py evaluator`,
re-timed with triton's do_bench in a sandbox, and searched with the playbook; the JSON is
rewritten after each batch, so a run stopped by --max-seconds loses at most its last batch. A batch
holds at most --batch problems (default: the worker's jobs in flight) whose estimated device memory
fits --memory-gb together (suite_bench.batches), so large problems do not run each other out of memory.
"""

import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from runner import devicefacts
from benches import suite_bench
from searches import services
from benches.harness import bench_worker, rerun_on_database
from searches.models import Device

DEFAULT_PROBLEMS = suite_bench.FIXTURE / "level1"


class Command(BaseCommand):
    help = "Validate, re-time and playbook-search a KernelBench level through the evaluator, resumably."

    def add_arguments(self, parser):
        parser.add_argument("--problems", default=str(DEFAULT_PROBLEMS),
                            help="a folder of KernelBench problem files (default: the fixture's level1)")
        parser.add_argument("--suite", default="KernelBench level 1", help="the suite's name")
        parser.add_argument("--json", required=True, help="the progress report: read, extended, rewritten")
        parser.add_argument("--device", choices=Device.values, default=settings.RUNNER_DEVICE,
                            help=f"default RUNNER_DEVICE, now {settings.RUNNER_DEVICE!r}")
        parser.add_argument("--limit", type=int, default=25, help="problems to do in this run (0: all left)")
        parser.add_argument("--again", default="",
                            help="problems done before to do again, by number or file name (e.g. 11,56,68)")
        parser.add_argument("--candidates", type=int, default=4,
                            help="each playbook search's candidate budget (default 4)")
        parser.add_argument("--batch", type=int, default=0,
                            help="problems validated together (default: the worker's jobs in flight)")
        parser.add_argument("--memory-gb", type=float, default=None,
                            help="device memory a batch may plan for (default: on cuda 60%% of the device's, "
                                 "on cpu no limit; 0: no limit)")
        parser.add_argument("--max-seconds", type=float, default=3600.0,
                            help="start no batch after this long; pause what still runs (default 3600)")
        parser.add_argument("--jobs-in-flight", type=int, default=None, help="default RUNNER_JOBS_IN_FLIGHT")
        parser.add_argument("--pool-size", type=int, default=None, help="default RUNNER_POOL_SIZE")
        parser.add_argument("--database", default="", help="a DATABASE_URL instead of a temporary SQLite file")
        parser.add_argument("--here", action="store_true", help="(internal) run in this process's database")

    def handle(self, *args, **opts):
        if not opts["here"]:
            sys.exit(self._in_child(opts))
        began = time.monotonic()
        device = opts["device"]
        path = Path(opts["json"])
        report = suite_bench.load_report(path)
        if opts["again"]:
            try:
                again = suite_bench.undo(report, [name.strip() for name in opts["again"].split(",") if name.strip()])
            except ValueError as error:
                raise CommandError(str(error)) from None
            self.stderr.write(f"to do again: {', '.join(again)}")
        root = Path(opts["problems"])
        if not root.is_dir():
            raise CommandError(f"{root}: not a folder")
        # Named under the folder's own name (level1/...), so the suite keeps each problem's level.
        files = [(f"{root.name}/{name}", raw) for name, raw in services.files_from_folder(root)]
        imported = services.suite_import(user=None, suite_name=opts["suite"], files=files, device=device)
        missing = {Path(row.file).name: row.missing_modules for row in imported.rows}
        self.stderr.write(f"suite “{imported.suite.name}”: {imported.counts}")
        worker = bench_worker("bench_suite", "suite", device, opts["pool_size"], opts["jobs_in_flight"])
        pool_size, jobs_in_flight = worker.pool_size, worker.jobs_in_flight
        call = {"started_at": timezone.now().isoformat(), "device": device, "limit": opts["limit"],
                "candidates": opts["candidates"], "jobs_in_flight": jobs_in_flight, "pool_size": pool_size,
                "max_seconds": opts["max_seconds"]}
        report.update(suite=imported.suite.name, problems_in_suite=len(imported.rows))
        report.setdefault("calls", []).append(call)
        bench = suite_bench.Bench(report=report, report_path=path, suite=imported.suite,
                                  sweep_name=imported.suite.name + suite_bench.SWEEP_SUFFIX, device=device,
                                  candidates=opts["candidates"], deadline=began + opts["max_seconds"],
                                  say=self.stderr.write, missing=missing)
        todo = bench.todo(opts["limit"])
        call["planned"] = [Path(m.file_name).name for m in todo]
        self.stderr.write(f"{len(todo)} problems this run, on {device} "
                          f"({sum(1 for r in report['problems'].values() if r.get('done'))} done before)")
        budget = memory_budget(device, opts["memory_gb"])
        call["memory_budget_gb"] = round(budget / 2**30, 1) if budget else None
        if todo:
            with worker:
                bench.run(todo, opts["batch"] or jobs_in_flight, worker, memory_budget=budget)
        call["finished_at"] = timezone.now().isoformat()
        call["wall_s"] = round(time.monotonic() - began, 1)
        report["summary"] = suite_bench.summary(report)
        suite_bench.save_report(path, report)
        for line in suite_bench.table(report):
            self.stdout.write(line)
        left = len(imported.rows) - report["summary"]["done"]
        self.stdout.write(f"done {report['summary']['done']} of {len(imported.rows)}; {left} left")

    def _in_child(self, opts) -> int:
        arguments = []
        for name in ("problems", "suite", "json", "device", "limit", "again", "candidates", "batch", "memory_gb",
                     "max_seconds", "jobs_in_flight", "pool_size"):
            if opts[name] is not None and opts[name] != "":
                arguments += [f"--{name.replace('_', '-')}", str(opts[name])]
        return rerun_on_database("bench_suite", arguments, opts["device"], opts["database"])


def memory_budget(device: str, memory_gb: float | None) -> int | None:
    """Bytes a batch of problems may plan for (suite_bench.batches), or None for no limit."""
    if memory_gb is not None:
        return int(memory_gb * 2**30) or None
    if device != Device.CUDA:
        return None
    total = devicefacts.read(device).get("memory_bytes")  # read in a child: no CUDA in this process
    return int(total * suite_bench.MEMORY_SHARE) if total else None
