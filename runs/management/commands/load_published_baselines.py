"""Load KernelBench's published baseline times (its results/timing files) beside the runs' own.

    python manage.py load_published_baselines KernelBench/results/timing/H100_Modal/baseline_time_torch.json \
        --problems KernelBench/KernelBench

Each file in the JSON is read in the problems folder (the level folders) and matched to the problems here
by the sha256 of its source, not by name. The times are the publisher's, on the GPU the file names; run
pages show them as such, never as this host's.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from runs.published import published_baselines_load


class Command(BaseCommand):
    help = "Load published baseline times (KernelBench's results/timing JSON), matched to problems by source hash."

    def add_arguments(self, parser):
        parser.add_argument("timing_files", nargs="+", type=Path, help="baseline_time_*.json files")
        parser.add_argument("--problems", required=True, type=Path,
                            help="the publisher's problems folder holding level1/, level2/, ... (KernelBench/KernelBench)")
        parser.add_argument("--publisher", default="",
                            help="who measured them (default: KernelBench and the file's folder, e.g. "
                                 "\"KernelBench H100_Modal\")")

    def handle(self, *args, timing_files, problems, publisher, **options):
        if not problems.is_dir():
            raise CommandError(f"{problems}: not a folder")
        for path in timing_files:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            who = publisher or f"KernelBench {path.parent.name}"
            try:
                loaded = published_baselines_load(path, problems, who)
            except (ValueError, KeyError, TypeError) as exc:
                raise CommandError(f"{path}: not a KernelBench timing file ({exc})") from exc
            self.stdout.write(f"{path.name} ({who}): {loaded.matched} files matched {loaded.problems} problems by "
                              f"source; {len(loaded.unmatched)} with no problem of the same source here, "
                              f"{len(loaded.missing)} not in {problems}.")
