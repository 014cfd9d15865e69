"""Print runs' scores as a table: fast_p at KernelBench's thresholds and the geomean per rule
("sample 0", "best of N"), pass@k, then each problem's speedup per run.

    python manage.py run_scores "model A" "model B" --baseline eager
    python manage.py run_scores "playbook R3" --every --json   # both modes x every baseline of the run

`--every` scores each run under both modes against eager, torch.compile's default and the run's own
baselines, one line per mode, baseline and rule; `--json` prints the same numbers as JSON.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from runs import scoring
from runs.lookup import run_named
from runs.selectors import BASELINES, MODES, run_baselines, run_scores, runs_comparison
from searches.config import MORE_BASELINES


def _num(value, fmt="{:.3f}") -> str:
    return "—" if value is None else fmt.format(value)


def score_json(score: dict) -> dict:
    """One run's scores under one mode and baseline, as plain data (problems by level and number)."""
    def pick(picked):
        return {"correct": picked[0], "speedup": picked[1]}

    return {
        "mode": score["mode"], "baseline": score["baseline"], "judged_by": score["judged_by"],
        "problems": score["problems"], "samples": score["samples"], "pending": score["pending"],
        "skipped": score["skipped"], "flags": score["flags"],
        "rules": {key: {"rule": rule["rule"], "fast_p": {f["label"]: f["value"] for f in rule["fast_p"]},
                        "geomean": rule["geomean"], "correct": rule["correct"]}
                  for key, rule in score["rules"].items()},
        "pass_at_k": {f"pass@{row['k']}": row["value"] for row in score["pass_at_k"]},
        "per_problem": [{"level": row["level"], "number": row["number"], "problem": row["problem"].name,
                         "sample0": pick(row["sample0"]), "best": pick(row["best"])} for row in score["rows"]],
    }


class Command(BaseCommand):
    help = "Print the scores of one or more runs (of one suite) side by side."

    def add_arguments(self, parser):
        parser.add_argument("runs", nargs="+", help="run names or codes")
        parser.add_argument("--suite", default="")
        parser.add_argument("--baseline", default="eager", choices=BASELINES + tuple(k for k, _ in MORE_BASELINES),
                            help="eager, compile, or one of the runs' own baselines (else eager)")
        parser.add_argument("--mode", default=MODES[0], choices=MODES,
                            help="the correctness and timing rule (KernelBench: from the stored verdicts, kernel means)")
        parser.add_argument("--every", action="store_true",
                            help="both modes against every baseline of each run (--mode and --baseline ignored)")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print the scores as JSON")

    def handle(self, *args, runs, suite, baseline, mode, every, as_json, **options):
        found = [run_named(text, suite) for text in runs]
        if len({run.suite_id for run in found}) > 1:
            raise CommandError("the runs are on different suites: compare runs of one suite")
        if every:
            return self._every(found, as_json=as_json)
        comparison = runs_comparison(found, baseline, mode)
        if as_json:
            return self._json(found, [[score] for score in comparison["scores"]])
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

    def _json(self, runs, scores) -> None:
        self.stdout.write(json.dumps({"suite": runs[0].suite.name, "runs": [
            {"name": run.name, "code": str(run.code), "source": run.source, "proposer": run.proposer,
             "rule": run.rule, "baselines": run_baselines(run), "shape": run.shape,
             "scores": [score_json(score) for score in run_scores_of]}
            for run, run_scores_of in zip(runs, scores)]}, indent=1))

    def _every(self, runs, *, as_json: bool) -> None:
        scores = [[run_scores(run, baseline, mode) for mode in MODES for baseline in run_baselines(run)]
                  for run in runs]
        if as_json:
            return self._json(runs, scores)
        out = self.stdout
        out.write(f"Suite “{runs[0].suite.name}”: fast_p (share of problems correct and faster than p) and geomean")
        header = " ".join(f"{f'fast_{t:g}':>8}" for t in scoring.THRESHOLDS)
        for run, of_run in zip(runs, scores):
            pending = max(score["pending"] for score in of_run)
            out.write(f"\n{run.name}: {of_run[0]['problems']} problems"
                      + (f", {pending} kernels not judged yet" if pending else ""))
            out.write(f"  {'mode':<12} {'baseline':<16} {'rule':<10} {header}   geomean  correct")
            for score in of_run:
                for rule in score["rules"].values():
                    cells = " ".join(f"{_num(f['value']):>8}" for f in rule["fast_p"])
                    out.write(f"  {score['mode']:<12} {score['baseline']:<16} {rule['rule']:<10} {cells}  "
                              f"{_num(rule['geomean'], '{:.3f}x'):>8}  {rule['correct']}/{score['problems']}")
                for reason in score["skipped"]:
                    out.write(f"  {score['mode']:<12} {score['baseline']:<16} not timed for some kernels: {reason}")
