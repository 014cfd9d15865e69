"""Judge a folder of existing solutions (e.g. a KernelBench run) against a suite's problems:
each file becomes a kernel of the problem with its level and number, queued for the evaluators.

    python manage.py sweep_solutions runs/my_run --suite "KernelBench L1-3"

Layouts: `level1/19_ReLU/kernel.py` (KernelBench's runs) or one `N_....py` per problem. The
scores appear on the suite page as the evaluators report.
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from searches import services
from searches.models import Suite


class Command(BaseCommand):
    help = "Queue every .py solution under PATH for evaluation against the suite's problem of the same level and number."

    def add_arguments(self, parser):
        parser.add_argument("path", help="a folder of solutions (read recursively)")
        parser.add_argument("--suite", required=True, help="the suite's name")
        parser.add_argument("--user", default="", help="username recorded as the kernels' author")

    def handle(self, *args, path, suite, user, verbosity, **options):
        root = Path(path)
        if not root.is_dir():
            raise CommandError(f"{path}: not a folder")
        target = Suite.objects.filter(name=suite).first()
        if target is None:
            raise CommandError(f"no suite named {suite!r}: import its problems first (import_problems)")
        owner = get_user_model().objects.filter(username=user).first() if user else None
        if user and owner is None:
            raise CommandError(f"no user named {user!r}")
        files = services.files_from_folder(root)
        if not files:
            raise CommandError(f"{path}: no .py files found")

        def progress(done, total, row):
            if verbosity >= 1:
                self.stdout.write(f"[{done}/{total}] {row.outcome:<9} {row.file}: {row.reason}")

        try:
            rows = services.suite_sweep(user=owner, suite=target, files=files, progress=progress)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        counts = {outcome: sum(1 for r in rows if r.outcome == outcome) for outcome in ("queued", "unmatched", "refused")}
        self.stdout.write(f"Suite “{target.name}”: {counts['queued']} queued, {counts['unmatched']} unmatched, "
                          f"{counts['refused']} refused, of {len(rows)} files.")
