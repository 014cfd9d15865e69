"""Write a run in KernelBench's runs layout: kernel files, eval_results.json, pass_at_k_results.json.

    python manage.py export_run "my run" out/my_run
    python scripts/benchmark_eval_analysis.py run_name=my_run level=1 hardware=- baseline=- \\
        eval_results_dir=out baseline_file=out/my_run/baseline_time_kernellab_eager.json
"""

from django.core.management.base import BaseCommand

from runs.export import export_run
from runs.lookup import run_named
from runs.selectors import MODES


class Command(BaseCommand):
    help = "Write RUN's kernels and results under OUT_DIR in KernelBench's runs layout."

    def add_arguments(self, parser):
        parser.add_argument("run", help="the run's name or code")
        parser.add_argument("out_dir")
        parser.add_argument("--suite", default="", help="the suite's name, when several runs share the name")
        parser.add_argument("--mode", default=MODES[0], choices=MODES, help="the correctness and timing rule")

    def handle(self, *args, run, out_dir, suite, mode, **options):
        report = export_run(run_named(run, suite), out_dir, mode)
        for name, why in sorted(report["notes"].items()):
            self.stdout.write(self.style.WARNING(f"{name}: not buildable by KernelBench's eval: {why}"))
        self.stdout.write(f"{report['files']} kernel files written to {', '.join(report['folders'])}; "
                          f"{len(report['notes'])} with a stated incompatibility (export_notes.json).")
