"""Judge a folder of existing solutions (a KernelBench run) against a suite's problems, as one run.

    python manage.py rejudge runs/my_run --suite "KernelBench L1-3" --name "my model, 2 samples"
    python manage.py rejudge runs/my_run --suite "KernelBench L1-3" --allow-library --rule kernelbench

Files: KernelBench's runs layout (`level_1_problem_19_sample_0_kernel.py`, the sample id kept),
or the older `level1/19_ReLU/kernel.py` and `N_....py` (sample 0). Each becomes a kernel of the
suite problem with its level and number, queued for the evaluators; the run's scores (fast_p,
pass@k) appear on its page and in `run_scores` as they report.
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from searches import services
from searches.models import Suite
from runs.models import Rule
from runs.services import run_rejudge


class Command(BaseCommand):
    help = "Judge every .py solution under RUN_DIR as one run of the suite (matched by level and number)."

    def add_arguments(self, parser):
        parser.add_argument("path", help="a folder of solutions (read recursively)")
        parser.add_argument("--suite", required=True, help="the suite's name")
        parser.add_argument("--name", default="", help="the run's name (default: the folder's name)")
        parser.add_argument("--allow-library", action="store_true",
                            help="judge with library calls allowed (KernelBench allows them)")
        parser.add_argument("--rule", "--mode", dest="rule", choices=Rule.values, default=Rule.KERNELLAB,
                            help="the correctness rule the runner judges by: kernellab (default), kernelbench "
                                 "(v0.1: allclose at 1e-2) or kernelbench-main (1e-4 for fp32)")
        parser.add_argument("--baselines", type=lambda text: [k for k in text.split(",") if k], default=[],
                            help="more baselines beside eager and torch.compile's default, comma-separated: "
                                 "reduce-overhead, max-autotune, cudagraph")
        parser.add_argument("--user", default="", help="username recorded as the kernels' author")

    def handle(self, *args, path, suite, name, allow_library, rule, baselines, user, verbosity, **options):
        root = Path(path)
        if not root.is_dir():
            raise CommandError(f"{path}: not a folder")
        target = Suite.objects.filter(name=suite).first()
        if target is None:
            raise CommandError(f"no suite named {suite!r}: import its problems first (import_problems)")
        owner = get_user_model().objects.filter(username=user).first() if user else None
        if user and owner is None:
            raise CommandError(f"no user named {user!r}")
        try:
            files = services.files_from_folder(root)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        if not files:
            raise CommandError(f"{path}: no .py files found")

        def progress(done, total, row):
            if verbosity >= 1:
                self.stdout.write(f"[{done}/{total}] {row.outcome:<9} {row.file} (sample {row.sample}): {row.reason}")

        try:
            run, rows = run_rejudge(user=owner, suite=target, files=files, name=name or root.resolve().name,
                                    allow_library=allow_library, rule=rule, baselines=baselines, progress=progress)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        counts = {outcome: sum(1 for r in rows if r.outcome == outcome)
                  for outcome in ("queued", "unmatched", "refused")}
        self.stdout.write(f"Run “{run.name}” ({run.code}) on “{target.name}”: {counts['queued']} queued, "
                          f"{counts['unmatched']} unmatched, {counts['refused']} refused, of {len(rows)} files.")
