"""`python manage.py evaluator`: the evaluation worker (one per GPU, or one for the CPU)."""

import logging

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Device
from evaluation.worker import EvaluationWorker, NameInUse, default_name


class Command(BaseCommand):
    help = ("Claim evaluation jobs (problem validations, kernel candidates) for this host's device and run them in "
            "runner sandboxes. Run one per GPU, pinned with CUDA_VISIBLE_DEVICES. Stops cleanly on SIGTERM.")

    def add_arguments(self, parser):
        parser.add_argument("--device", choices=Device.values, default=None,
                            help=f"which jobs to take (default: RUNNER_DEVICE, now {settings.RUNNER_DEVICE!r})")
        parser.add_argument("--once", action="store_true", help="work through the queued jobs, then exit")
        parser.add_argument("--name", default="",
                            help="worker name, unique among running workers (default: host-device, plus the GPU "
                                 "where CUDA_VISIBLE_DEVICES names one). Restarting under the same name frees the "
                                 "jobs the previous run held; a second live evaluator under one name is refused.")
        parser.add_argument("--pool-size", type=int, default=None,
                            help="warm sandboxes to keep; 0 starts each job's own, which saves memory and idle CPU and "
                                 f"costs each job a sandbox's start (default: RUNNER_POOL_SIZE, now "
                                 f"{settings.RUNNER_POOL_SIZE})")
        parser.add_argument("--jobs-in-flight", type=int, default=None,
                            help="jobs run at once, building while one holds the device (default: "
                                 f"RUNNER_JOBS_IN_FLIGHT, now {settings.RUNNER_JOBS_IN_FLIGHT})")
        parser.add_argument("--quick-jobs-in-flight", type=int, default=None,
                            help="of those, jobs that build nothing long (no load_inline; not a validation) "
                                 f"(default: RUNNER_QUICK_JOBS_IN_FLIGHT, now {settings.RUNNER_QUICK_JOBS_IN_FLIGHT})")
        parser.add_argument("--poll", type=float, default=0.5, help="seconds between looks at an empty queue")
        parser.add_argument("--rekick-seconds", type=float, default=60.0,
                            help="how often to re-kick active searches whose orchestration went quiet, e.g. after "
                                 "a task worker was killed (default 60; 0: never)")

    def handle(self, *args, device, once, name, pool_size, poll, rekick_seconds, jobs_in_flight=None,
               quick_jobs_in_flight=None, **options):
        device = device or settings.RUNNER_DEVICE
        if device not in Device.values:
            raise CommandError(f"RUNNER_DEVICE={device!r} is not a device KernelLab knows: use cpu or cuda.")
        pool_size = settings.RUNNER_POOL_SIZE if pool_size is None else pool_size
        if pool_size < 0:
            raise CommandError("--pool-size must be 0 (no warm sandboxes) or more.")
        name = name.strip() or default_name(device)
        logging.getLogger("searches").setLevel(logging.INFO)
        in_flight = max(1, jobs_in_flight or settings.RUNNER_JOBS_IN_FLIGHT)
        quick = min(in_flight, max(1, quick_jobs_in_flight or settings.RUNNER_QUICK_JOBS_IN_FLIGHT))
        worker = EvaluationWorker(name=name, device=device, pool_size=pool_size, poll_seconds=poll,
                                  rekick_seconds=rekick_seconds, jobs_in_flight=in_flight, quick_in_flight=quick)
        self.stderr.write(f"evaluator {name}: serving {device} jobs with {pool_size} warm sandbox(es), "
                          f"{in_flight} in flight ({quick} without a long build)")
        try:
            done = worker.run(once=once)
        except NameInUse as error:
            raise CommandError(str(error)) from None
        self.stderr.write(f"evaluator {name}: stopped after {done} job(s)")
