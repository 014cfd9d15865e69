"""`python manage.py bench_idea_bank`: does what one search learned reach the next one's model?

A team runs 5 searches in sequence on related problems (one op family, one size class, one GPU), with
the idea bank on (prior weight 50) and off (0), over several seeds. Every search goes through the real
engine, the real `anthropic` client and the product's own ideas prompt, against the local stand-in for
the Messages API; the "model" answering it is scripted here and sees only the request: it tags each idea
with a technique drawn at random, unless the request shows the team's priors, where it takes the
best-rated technique shown (the first of equals). The world is fixed here too: each technique
succeeds with its own probability and gain over the parent, unknown to the product. The evaluator is
simulated (verdicts recorded through `kernel_record_verdict`, no runner), since what is measured is the
information, not the kernels.

It prints, per search of the sequence, the proposer calls and dollars until a kernel first reached the
target speedup over its search's starting kernel (a search that never does counts its calls at the cap),
as a mean with a 95% interval over the seeds: bank off; on but each search seeing only its own ideas (the
priors include a search's own finished ideas); on with the team's earlier searches. It measures that the information reaches
the model, not that a real model uses it well. By default on a temporary SQLite file.
"""

import math
import os
import random
import re
import statistics
import sys

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from benches.harness import rerun_on_database
from evaluation.models import EvaluationJob
from memory.keys import TECHNIQUES
from searches import catalog, services
from searches.engine import kick, loop
from searches.models import Kernel, ProposerCall, Search

FAMILY = "softmax"
# The world: (success probability, gain over the parent) per technique; anything else (0.1, 1.05).
WORLD = {"warp-reductions": (0.8, 1.5), "vectorised-loads": (0.7, 1.3), "algorithm": (0.5, 1.4),
         "tiling": (0.3, 1.15), "launch-config": (0.4, 1.08), "tensor-cores": (0.05, 1.2),
         "precision": (0.2, 1.1)}
OTHERWISE = (0.1, 1.05)
RATED = re.compile(r"\b([a-z-]+) \(rated ([\d.]+)\)")
STARTING_MS = 2.0
# Bank off (prior weight 0); on, each search seeing only its own ideas (a person and a private search each);
# on, each seeing the team's earlier searches too (the difference between the last two is what crosses searches).
MODES = ("off", "alone", "team")


class ScriptedModel:
    """Reads only the request. Ideas: the best-rated technique the priors show, else one at random."""

    def __init__(self, rng: random.Random):
        self.rng, self.made = rng, 0

    def __call__(self, seen):
        from tests.fakes.anthropic_server import asked_counts, kernel_call, task_of

        self.made += 1
        if task_of(seen) != "ideas":
            return kernel_call("import torch\nfrom torch import nn\n\nTAG = '%d'\n\nclass ModelNew(nn.Module):\n"
                               "    def forward(self, x):\n        return x\n" % self.made)
        count, briefs = asked_counts(seen)
        best = self.best_shown(seen.user_text)
        ideas = []
        for i in range(count):
            technique = best or self.rng.choice(list(TECHNIQUES))
            ideas.append({"title": f"{technique} attempt {self.made}.{i}", "description": f"Apply {technique}.",
                          "briefs": ["as the title says"] * briefs, "technique": technique, "expected_speedup": 1.3})
        return {"ideas": ideas}

    @staticmethod
    def best_shown(text: str) -> str:
        """The technique the request rates best (the first shown of equals), or "" where it rates none."""
        rated = [(float(rating), -i, technique) for i, (technique, rating) in enumerate(RATED.findall(text))]
        return max(rated)[2] if rated else ""


def verdict(median_ms: float | None, seed: int) -> dict:
    correct = median_ms is not None
    return {"schema": 1, "status": "correct" if correct else "incorrect",
            "reason": "" if correct else "wrong on the offset inputs: err 3.2 (simulated)", "quarantined": False,
            "quarantine_reason": "", "seed": seed, "precision": "fp32", "compile": {"seconds": 0.1, "log": ""},
            "correctness": {"passed": correct, "per_distribution": []},
            "timing": {"median_ms": median_ms, "n": 10} if correct else None,
            "baseline": {"eager_ms": STARTING_MS, "compile_ms": STARTING_MS},
            "speedup_vs_eager": STARTING_MS / median_ms if correct else None, "speedup_vs_compile": None,
            "environment": {"device_name": "simulated GPU", "torch": "-", "runner_version": "bench"}}


def judge(rng: random.Random) -> None:
    """The simulated evaluator: each kernel succeeds as its idea's technique does in WORLD."""
    while (job := EvaluationJob.objects.filter(status=EvaluationJob.Status.QUEUED).select_related("kernel__idea")
           .order_by("id").first()) is not None:
        kernel = job.kernel
        if job.purpose == "rerun":
            median = kernel.median_ms
        elif kernel.idea_id is None:
            median = STARTING_MS
        else:
            chance, gain = WORLD.get(kernel.idea.technique, OTHERWISE)
            parent = kernel.parent.median_ms if kernel.parent and kernel.parent.median_ms else STARTING_MS
            median = parent / gain if rng.random() < chance else None
        services.kernel_record_verdict(kernel=kernel, job=job, result=verdict(median, seed=rng.randrange(1 << 30)))


def problems(count: int):
    """Related problems: one family and size class, sources apart."""
    entry = catalog.get("softmax-cpu")
    made = []
    for n in range(count):
        problem = services.problem_create(user=None, name=f"Softmax variant {n + 1}", device="cpu", family=FAMILY,
                                          source=entry.source + f"\n# variant {n + 1}\n")
        services.problem_record_validation(problem=problem, job=problem.jobs.get(), result={
            "schema": 1, "status": "ok", "reason": "", "outputs": [{"shape": [128, 4096], "dtype": "float32"}],
            "family": FAMILY, "flops": 1.0, "min_bytes": 4.0e6, "environment": {},
            "baseline": {"eager_ms": STARTING_MS, "compile_ms": STARTING_MS, "compile_mode": "default"}})
        problem.refresh_from_db()
        made.append(problem)
    return made


def run_search(problem, user, *, bank: bool, target: float, rounds: int, rng: random.Random) -> tuple[int, float, bool]:
    """(calls, dollars, reached) until a kernel first reached `target` over the starting kernel."""
    search = services.search_start(problem=problem, user=user, proposer="anthropic", model="claude-sonnet-4-6",
                                   device="cpu", rounds=rounds, parents_per_round=1, ideas_per_parent=1,
                                   kernels_per_idea=1, bank_size=0, repair_attempts=0, private=True,
                                   prior_weight=50 if bank else 0)
    while True:
        loop.advance(search.id)
        judge(rng)
        search.refresh_from_db()
        best = (Kernel.objects.filter(search=search, status="correct", median_ms__lte=STARTING_MS / target)
                .exclude(call=None).order_by("call_id").first())
        if best is not None:
            services.search_cancel(search=search, user=user)
            calls = ProposerCall.objects.filter(search=search, id__lte=best.call_id)
            return calls.count(), sum(c.cost_usd for c in calls), True
        if search.status in Search.FINISHED:
            calls = ProposerCall.objects.filter(search=search)
            return 1 + 2 * rounds, sum(c.cost_usd for c in calls), False


def interval(values: list[float]) -> str:
    """Mean ± the half-width of a 95% t-interval (normal beyond 30 samples)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.3g}"
    t = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26}.get(len(values), 2.0)
    return f"{mean:.3g} ± {t * statistics.stdev(values) / math.sqrt(len(values)):.2g}"


class Command(BaseCommand):
    help = "Calls and dollars to a target speedup over 5 related searches, the idea bank on and off (scripted model)."

    def add_arguments(self, parser):
        parser.add_argument("--seeds", type=int, default=5)
        parser.add_argument("--searches", type=int, default=5)
        parser.add_argument("--target", type=float, default=2.0, help="speedup over the starting kernel (default 2)")
        parser.add_argument("--rounds", type=int, default=12, help="rounds a search may take (the cap)")
        parser.add_argument("--database", default="", help="a DATABASE_URL instead of a temporary SQLite file")
        parser.add_argument("--here", action="store_true", help="(internal) run in this process's database")

    def handle(self, *args, **opts):
        if not opts["here"]:
            arguments = [f"--{k}={opts[k]}" for k in ("seeds", "searches", "target", "rounds")]
            sys.exit(rerun_on_database("bench_idea_bank", arguments, "cpu", opts["database"]))
        from tests.fakes.anthropic_server import FakeAnthropic  # the stand-in the tests use

        kick.set_kicker(lambda search_id: None)  # this process drives every search itself
        related = problems(opts["searches"])
        people = get_user_model().objects
        results = {}  # (mode, search index) -> [(calls, dollars, reached)]
        for seed in range(opts["seeds"]):
            for mode in MODES:
                rng = random.Random(seed)  # the world's draws, the same start in every mode
                # Every search private: a team per (seed, mode) sees only its own; "alone", one person a search.
                team = people.create_user(f"team-{seed}-{mode}")
                with FakeAnthropic(responder=ScriptedModel(random.Random(seed))) as fake:
                    settings.ANTHROPIC_BASE_URL = fake.url
                    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-local-stand-in"
                    for index, problem in enumerate(related):
                        user = people.create_user(f"alone-{seed}-{index}") if mode == "alone" else team
                        outcome = run_search(problem, user, bank=mode != "off", target=opts["target"],
                                             rounds=opts["rounds"], rng=rng)
                        results.setdefault((mode, index), []).append(outcome)
                        self.stderr.write(f"seed {seed} {mode} search {index + 1}: {outcome[0]} calls, "
                                          f"${outcome[1]:.4f}{'' if outcome[2] else ' (cap)'}")
        self.stdout.write(self.table(results, opts))

    @staticmethod
    def table(results: dict, opts: dict) -> str:
        def calls(mode, index):
            return [r[0] for r in results[(mode, index)]]

        def dollars(mode, index):
            return [r[1] for r in results[(mode, index)]]

        lines = [f"target {opts['target']:g}x over the starting kernel; {opts['seeds']} seeds; cap {opts['rounds']} "
                 "rounds (a search that never reaches it counts 1 + 2 x cap calls); mean ± 95% interval",
                 "| search | calls, bank off | calls, own search only | calls, team's bank | team / off | "
                 "dollars, bank off | dollars, team's bank | reached off / own / team |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for i in range(opts["searches"]):
            ratio = statistics.fmean(calls("team", i)) / statistics.fmean(calls("off", i))
            reached = " / ".join(f"{sum(r[2] for r in results[(m, i)])}/{len(results[(m, i)])}" for m in MODES)
            lines.append(f"| {i + 1} | {interval(calls('off', i))} | {interval(calls('alone', i))} | "
                         f"{interval(calls('team', i))} | {ratio:.2f} | {interval(dollars('off', i))} | "
                         f"{interval(dollars('team', i))} | {reached} |")
        later = range(1, opts["searches"])
        if later:
            mean = {m: statistics.fmean(c for i in later for c in calls(m, i)) for m in MODES}
            ratio = mean["team"] / mean["off"]
            lines.append(f"searches 2-{opts['searches']}: the team's bank takes {ratio:.2f} of the calls of bank off "
                         f"({'meets' if ratio <= 0.5 else 'misses'} the target of at most 0.5) and "
                         f"{mean['team'] / mean['alone']:.2f} of the calls of a search that sees only its own ideas")
        return "\n".join(lines)
