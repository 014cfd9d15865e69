"""Print runs' scores as a table: fast_p at KernelBench's thresholds and the geomean per rule
("sample 0", "best of N"), pass@k, then each problem's speedup per run.

    python manage.py run_scores "model A" "model B" --baseline eager
"""

from django.core.management.base import BaseCommand, CommandError

from runs import scoring
from runs.lookup import run_named
from runs.models import MORE_BASELINES
from runs.selectors import BASELINES, MODES, runs_comparison


def _num(value, fmt="{:.3f}") -> str:
    return "—" if value is None else fmt.format(value)


class Command(BaseCommand):
    help = "Print the scores of one or more runs (of one suite) side by side."

    def add_arguments(self, parser):
        parser.add_argument("runs", nargs="+", help="run names or codes")
        parser.add_argument("--suite", default="")
        parser.add_argument("--baseline", default="eager", choices=BASELINES + tuple(k for k, _ in MORE_BASELINES),
                            help="eager, compile, or one of the runs' own baselines (else eager)")
        parser.add_argument("--mode", default=MODES[0], choices=MODES,
                            help="the correctness and timing rule (KernelBench: from the stored verdicts, eager only)")

    def handle(self, *args, runs, suite, baseline, mode, **options):
        found = [run_named(text, suite) for text in runs]
        if len({run.suite_id for run in found}) > 1:
            raise CommandError("the runs are on different suites: compare runs of one suite")
        comparison = runs_comparison(found, baseline, mode)
        out = self.stdout
        out.write(f"Suite “{found[0].suite.name}”, mode {comparison['mode']}, speedup vs {comparison['baseline']}")
        for score in comparison["scores"]:
            out.write(f"\n{score['run'].name}: {score['problems']} problems, {score['samples']} sample(s) each at most"
                      + (f", {score['pending']} kernels not judged yet" if score["pending"] else ""))
            out.write("  rule        " + " ".join(f"{p:>8}" for p in [f"fast_{t:g}" for t in scoring.THRESHOLDS])
                      + "  geomean")
            for rule in score["rules"].values():
                cells = " ".join(f"{_num(f['value']):>8}" for f in rule["fast_p"])
                out.write(f"  {rule['rule']:<11} {cells}  {_num(rule['geomean'], '{:.3f}x')}")
            out.write("  " + ", ".join(f"pass@{row['k']} {row['value']:.3f}" for row in score["pass_at_k"]))
            out.write("  flagged: " + ", ".join(f"{key.replace('_', ' ')} {n}" for key, n in score["flags"].items()))
        out.write("\nper problem (sample 0 / best of N speedup; — not correct): "
                  + " | ".join(score["run"].name for score in comparison["scores"]))
        for line in comparison["problems"]:
            row = line["row"]
            cells = "  ".join(f"{_num(r['sample0'][1] if r['sample0'][0] else None, '{:.2f}x'):>7} / "
                              f"{_num(r['best'][1] if r['best'][0] else None, '{:.2f}x'):<7}" for r in line["runs"])
            out.write(f"  L{row['level']} #{row['number']:<4} {row['problem'].name[:40]:<40} {cells}")
