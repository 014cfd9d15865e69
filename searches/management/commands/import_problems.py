"""Import a folder (or zip) of KernelBench problem files into a suite, with a line per file.

    python manage.py import_problems tests/fixtures/kernelbench --suite "KernelBench L1-3"

The level comes from a `levelN` folder (PATH itself included), the number from the file name's `N_`
prefix; a file that downloads Hub models (level 4) is refused unless they are on disk (README). Problems
are stored, not yet validated, unless --validate queues their validation now (in the bulk class;
with --user, as many as that person's cap on queued jobs allows). One import is bounded
(SUITE_IMPORT_MAX_PROBLEMS files, SUITE_IMPORT_MAX_BYTES uncompressed); with --user, a suite of
someone else's name makes one of that person's own.
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from searches import selectors, services
from searches.models import Device


class Command(BaseCommand):
    help = "Import every .py problem file under PATH (a folder, a zip or one file) into a suite."

    def add_arguments(self, parser):
        parser.add_argument("path", help="a folder (read recursively), a .zip, or one .py file")
        parser.add_argument("--suite", required=True, help="the suite's name; made if new")
        parser.add_argument("--device", default=None, choices=Device.values,
                            help="where the problems run (default: cuda where a CUDA worker serves, else cpu)")
        parser.add_argument("--validate", action="store_true",
                            help="queue each new problem's sandboxed validation now (default: store only)")
        parser.add_argument("--user", default="", help="username recorded as the problems' creator")

    def handle(self, *args, path, suite, device, validate, user, verbosity, **options):
        device = device or selectors.default_device()
        root = Path(path)
        try:
            if root.is_dir():
                files = services.files_from_folder(root)
            elif root.suffix == ".zip":
                with root.open("rb") as handle:
                    files = services.files_from_zip(handle)
            elif root.is_file():
                files = [(root.name, root.read_bytes())]
            else:
                raise CommandError(f"{path}: no such file or folder")
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        if not files:
            raise CommandError(f"{path}: no .py problem files found")
        owner = None
        if user:
            owner = get_user_model().objects.filter(username=user).first()
            if owner is None:
                raise CommandError(f"no user named {user!r}")

        width = len(str(len(files)))

        def progress(done, total, row):
            if verbosity < 1:
                return
            detail = row.reason
            if row.missing_modules:
                detail = (detail + "; " if detail else "") + f"needs {', '.join(row.missing_modules)} (not installed)"
            line = f"[{done:>{width}}/{total}] {row.outcome:<9} {row.file}" + (f": {detail}" if detail else "")
            self.stdout.write(line)

        try:
            report = services.suite_import(user=owner, suite_name=suite, files=files, device=device,
                                           validate=validate, progress=progress)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        for notice in report.notices:
            self.stdout.write(self.style.WARNING(notice))
        counts = report.counts
        needing = sum(1 for row in report.rows if row.missing_modules)
        summary = (f"Suite “{report.suite.name}”: {counts['accepted']} accepted, {counts['duplicate']} duplicates, "
                   f"{counts['refused']} refused, of {len(report.rows)} files.")
        if needing:
            summary += f" {needing} need modules that are not installed (see README, optional dependencies)."
        if not validate and counts["accepted"]:
            summary += " Stored, not yet validated."
        self.stdout.write(self.style.SUCCESS(summary) if not counts["refused"] else self.style.WARNING(summary))
