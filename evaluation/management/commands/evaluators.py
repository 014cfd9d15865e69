"""`python manage.py evaluators`: one evaluator per GPU of this host, each pinned with
CUDA_VISIBLE_DEVICES, restarted when it dies, all stopped on SIGTERM or Ctrl-C."""

import signal

from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Device
from evaluation.supervisor import NoGpus, Supervisor, parse_devices, visible_gpus


class Command(BaseCommand):
    help = ("Start one `evaluator` per GPU of this host (found with NVML or nvidia-smi, without a CUDA context "
            "here), each pinned to its GPU with CUDA_VISIBLE_DEVICES and named host-cuda-gpuN; restart any that "
            "dies; stop them all cleanly on SIGTERM. Arguments after -- go to every evaluator.")

    def add_arguments(self, parser):
        parser.add_argument("--devices", default="",
                            help="GPUs to serve, comma-separated as CUDA_VISIBLE_DEVICES takes them (default: the "
                                 "CUDA_VISIBLE_DEVICES this command was given, else every GPU of the host)")
        parser.add_argument("--device", choices=Device.values, default=Device.CUDA,
                            help="the jobs each evaluator takes (default cuda; cpu runs the same supervision with "
                                 "CPU evaluators, one per listed slot, as the tests do on a host without a GPU)")
        parser.add_argument("--restart-delay", type=float, default=2.0,
                            help="seconds before restarting an evaluator that died young; doubles while they keep "
                                 "dying, up to 60 (default 2)")
        parser.add_argument("evaluator_args", nargs="*", help="passed to every evaluator, after --")

    def handle(self, *args, devices, device, restart_delay, evaluator_args, **options):
        try:
            gpus = parse_devices(devices) if devices.strip() else visible_gpus()
        except (NoGpus, ValueError) as error:
            raise CommandError(f"{error}.") from None
        if any(arg in ("--name", "--device") or arg.startswith(("--name=", "--device=")) for arg in evaluator_args):
            raise CommandError("each evaluator's --name and --device are set here; leave them out after --.")
        supervisor = Supervisor(gpus=gpus, device=device, evaluator_args=evaluator_args, restart_delay=restart_delay)
        stopping = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stopping.append(True))
        self.stderr.write(f"evaluators: one {device} evaluator per GPU for {', '.join(gpus)}")
        supervisor.run(lambda: bool(stopping))
        restarts = sum(child.restarts for child in supervisor.children)
        self.stderr.write(f"evaluators: stopped ({restarts} restart(s))")
