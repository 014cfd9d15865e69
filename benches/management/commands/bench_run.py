"""`python manage.py bench_run`: a search run on a suite through the evaluator, scored in both modes.

Validates the suite's problems on one child `manage.py evaluator`, starts one search configuration on
every problem as one run (the knobs are `start_run`'s: FIELD=VALUE, e.g. proposer=playbook rounds=2
baselines=cudagraph), advances its searches in this process until they finish or --max-seconds pass,
then prints the run's scores under KernelLab's and KernelBench's modes against eager, torch.compile's
default and the run's own baselines (`run_scores --every`); --json writes the same as JSON.

    python manage.py bench_run --suite "L1 subset" --name "playbook R2" --device cuda \\
        proposer=playbook rounds=2 baselines=cudagraph --json run.json
"""

import io
import time
from json import dumps, loads
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from benches import search_run, throughput
from benches.harness import bench_worker
from searches.models import Device, Problem, Suite


class Command(BaseCommand):
    help = "Start a search run on a suite through the evaluator, wait for it, and print its scores."

    def add_arguments(self, parser):
        parser.add_argument("knobs", nargs="*", help="start_run's knobs, e.g. proposer=playbook rounds=2")
        parser.add_argument("--suite", required=True)
        parser.add_argument("--name", required=True, help="the run's name (unique on the suite)")
        parser.add_argument("--user", default="", help="username the searches belong to")
        parser.add_argument("--device", choices=Device.values, default=settings.RUNNER_DEVICE,
                            help=f"default RUNNER_DEVICE, now {settings.RUNNER_DEVICE!r}")
        parser.add_argument("--max-seconds", type=float, default=420.0,
                            help="validation and search together; searches still running then are paused")
        parser.add_argument("--pool-size", type=int, default=None, help="default RUNNER_POOL_SIZE")
        parser.add_argument("--jobs-in-flight", type=int, default=None, help="default RUNNER_JOBS_IN_FLIGHT")
        parser.add_argument("--json", default="", help="also write the scores to this file")

    def handle(self, *args, knobs, suite, name, user, device, max_seconds, pool_size, jobs_in_flight, json,
               **options):
        target = Suite.objects.filter(name=suite).first()
        if target is None:
            raise CommandError(f"no suite named {suite!r}")
        deadline = time.monotonic() + max_seconds
        say = self.stderr.write
        with bench_worker("bench_run", "run", device, pool_size, jobs_in_flight) as worker:
            say(f"Validating the {target.members.count()} problems of “{target.name}” on {device}…")
            problems = search_run.validate_suite(target, worker, deadline)
            for problem in problems:
                if problem.validation_status != Problem.Validation.OK:
                    say(f"not validated: {problem.name}: {problem.validation_status} {problem.validation_reason}")
            began = time.monotonic()
            run = search_run.start_and_drive(suite=target, name=name, knobs=[*knobs, f"device={device}"],
                                             user=user, worker=worker, deadline=deadline, say=say)
            evaluator = throughput.by_problem([rs.search for rs in run.run_searches.select_related("search")],
                                              wall_s=time.monotonic() - began)
        call_command("run_scores", str(run.code), "--every", stdout=self.stdout)
        self.stdout.write("\n".join(["", *throughput.by_problem_table(evaluator)]))
        if json:
            scores = io.StringIO()
            call_command("run_scores", str(run.code), "--every", "--json", stdout=scores)
            Path(json).write_text(dumps({**loads(scores.getvalue()), "evaluator": evaluator}, indent=1))
