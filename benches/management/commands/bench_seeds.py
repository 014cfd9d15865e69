"""`python manage.py bench_seeds`: the seed problems' playbook searches through the product's own path.

By default on a temporary SQLite file (the user's data is never touched), in a child with
DATABASE_URL and RUNNER_DEVICE set: loads the catalog problems (the five seed problems on cuda, the
CPU twins of softmax, layernorm and GELU on cpu, or --keys), validates them on one child
`manage.py evaluator`, starts one playbook search per problem at once and prints one row per
problem: the best kernel, its median with the 95% CI, speedups against eager and torch.compile,
its share of the speed of light, the precision used, candidates, rounds and wall time.
"""

import json
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from benches import seeds
from searches.foreground import problem_for, queue_validation, validated
from benches.harness import bench_worker, rerun_on_database
from searches.config import SEARCH_CONFIG as CONFIG
from searches.models import Device


class Command(BaseCommand):
    help = "Run playbook searches on the seed problems through the evaluator and print one row per problem."

    def add_arguments(self, parser):
        parser.add_argument("--device", choices=Device.values, default=settings.RUNNER_DEVICE,
                            help=f"default RUNNER_DEVICE, now {settings.RUNNER_DEVICE!r}")
        parser.add_argument("--keys", default="", help="comma-separated catalog keys (default: the seed problems "
                                                        f"of the device: {', '.join(seeds.GPU_SEEDS)} on cuda; "
                                                        f"{', '.join(seeds.CPU_SEEDS)} on cpu)")
        CONFIG.add_arguments(parser, seeds.SHAPE, defaults=seeds.SHAPE_DEFAULTS)
        parser.add_argument("--max-seconds", type=float, default=1800.0,
                            help="pause the searches still running after this long (default 1800)")
        parser.add_argument("--jobs-in-flight", type=int, default=None, help="default RUNNER_JOBS_IN_FLIGHT")
        parser.add_argument("--pool-size", type=int, default=None, help="default RUNNER_POOL_SIZE")
        parser.add_argument("--json", default="", help="also write the rows to this file")
        parser.add_argument("--database", default="",
                            help="a DATABASE_URL to use instead of a temporary SQLite file (migrated)")
        parser.add_argument("--here", action="store_true", help="(internal) run in this process's database")

    def handle(self, *args, **opts):
        if not opts["here"]:
            sys.exit(self._in_child(opts))
        device = opts["device"]
        keys = [k for k in opts["keys"].split(",") if k] or list(seeds.GPU_SEEDS if device == "cuda" else seeds.CPU_SEEDS)
        worker = bench_worker("bench_seeds", "seeds", device, opts["pool_size"], opts["jobs_in_flight"])
        shape = CONFIG.from_options(opts, seeds.SHAPE)
        with worker:
            problems = [problem_for(key, self.stderr.write) for key in keys]
            for problem in problems:  # queued together: the evaluator validates several at once
                queue_validation(problem)
            problems = [validated(problem, worker, self.stderr.write) for problem in problems]
            self.stderr.write(f"Searching {len(problems)} problems on {device}: R={shape['rounds']} "
                              f"B={shape['parents_per_round']} I={shape['ideas_per_parent']} "
                              f"K={shape['kernels_per_idea']}…")
            searches = seeds.run(problems=problems, worker=worker, shape=shape, max_seconds=opts["max_seconds"])
        rows = [seeds.row(search) for search in searches]
        for line in seeds.table(rows):
            self.stdout.write(line)
        if opts["json"]:
            Path(opts["json"]).write_text(json.dumps(rows, indent=2, default=str) + "\n")

    def _in_child(self, opts) -> int:
        arguments = ["--device", opts["device"]]
        for name in ("keys", *seeds.SHAPE, "max_seconds", "jobs_in_flight", "pool_size", "json"):
            if opts[name] not in ("", None):
                arguments += [f"--{name.replace('_', '-')}", str(opts[name])]
        return rerun_on_database("bench_seeds", arguments, opts["device"], opts["database"])
