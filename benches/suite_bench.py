"""A KernelBench level through the product's own path, resumable: `manage.py bench_suite`.

The level's files are imported into a suite (services.suite_import); a slice of its problems is
validated as EvaluationJobs taken by a real evaluator child (eager and torch.compile baselines);
each validated problem's eager model is timed once more by `triton.testing.do_bench` inside a
runner sandbox, with nothing else running (a problem's code never runs in this process); then
each problem whose family the playbook knows gets a small playbook search (services.search_start
and the engine, as `manage.py search` runs it) and joins a second suite, whose fast_p and
geomean are the suite page's own (selectors.suite_scores).

Progress lives in a JSON report that each run reads and extends: problems done are skipped.
"""

import ast
import json
import time
from pathlib import Path

from django.core.exceptions import ValidationError
from django.utils import timezone

import runner
from evaluation.models import EvaluationJob
from searches import selectors, services
from searches.foreground import Engines, EvaluatorChild
from searches.models import Device, Problem, Search, Suite
from searches.problem_memory import input_bytes

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kernelbench"
SWEEP_SUFFIX = " (playbook sweep)"
WAITING = (Problem.Validation.PENDING, Problem.Validation.RUNNING)
DO_BENCH_TARGET = 0.03  # the eager baseline within 3% of do_bench, measured alone
# what the report keeps of each problem's sweep row (selectors.suite_scores_export)
SWEEP_ROW = ("number", "file", "outcome", "speedup_vs_eager", "speedup_vs_compile")
# A problem in flight holds its tensors several times over: the validation's copy, the truths'
# sandbox's and the candidate's (inputs, outputs, float64 truths), torch.compile's buffers. On the
# H200, 6 GiB inputs meant 12-30 GiB per process; 8x keeps a batch's sum under the device's memory.
MEMORY_FACTOR = 8
# The share of the device's memory a batch may plan for (other work, CUDA contexts, fragmentation).
MEMORY_SHARE = 0.6

# Static guesses, only to order the work (families the playbook knows first); the family a
# search uses is the one validation reports from the traced forward.
_GUESSES = (
    ("loss", ("loss", "cross_entropy", "kl_div", "nll", "margin", "triplet", "hinge")),
    ("other", ("conv_transpose", "ConvTranspose", "Conv1d", "Conv3d", "conv1d", "conv3d", "log_softmax",
               "LogSoftmax", "scaled_dot_product", "pool", "Pool", "BatchNorm", "InstanceNorm", "GroupNorm",
               "cumsum", "cumprod", "argmax", "argmin", "triu", "tril", "diag")),
    ("conv2d", ("Conv2d", "conv2d")),
    ("softmax", ("softmax", "Softmax")),
    ("layernorm", ("LayerNorm", "layer_norm")),
    ("matmul", ("matmul", "mm", "bmm", "einsum", "Linear", "linear", "MatMult")),
    ("reduction", ("sum", "mean", "max", "min", "prod", "norm", "amax", "amin", "var", "std")),
)


def family_guess(source: str) -> str:
    """A cheap guess of the op family from the names forward uses (never runs the source)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "other"
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            names.add("MatMult")
    for family, words in _GUESSES:
        if any(word in name for name in names for word in words if len(word) > 3) or names & set(words):
            return family
    return "elementwise"


def known_first(members, guesses: dict) -> list:
    """The suite's members, those whose guessed family the playbook knows first, each group in
    KernelBench order."""
    from proposers.playbook import FAMILY_NAMES

    return sorted(members, key=lambda m: (guesses[m.pk] not in FAMILY_NAMES, m.level or 0, m.number or 0, m.pk))


def undo(report: dict, names: list[str]) -> list[str]:
    """Mark problems done before as to do again (a reference measured while the GPU was held
    back, say), by number or file name; the files now to do. A name matching nothing is an error."""
    again = []
    for name in names:
        found = [file for file, row in report["problems"].items() if name in (file, str(row.get("number")))]
        if not found:
            raise ValueError(f"{name!r}: no problem of the report has that number or file name")
        for file in found:
            report["problems"][file]["done"] = False
        again += found
    return again


def load_report(path: Path) -> dict:
    if path and path.exists():
        return json.loads(path.read_text())
    return {"suite": "", "problems": {}, "calls": []}


def save_report(path: Path, report: dict) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(report, indent=1, default=str) + "\n")
        tmp.replace(path)


def published_baselines(level: int) -> dict:
    """KernelBench's published H100 baselines (ms, eager and torch.compile), by file name."""
    folder = FIXTURE / "results" / "timing" / "H100_Modal"
    out = {}
    for key, name in (("eager", "baseline_time_torch.json"), ("compile", "baseline_time_torch_compile_inductor_default.json")):
        path = folder / name
        data = json.loads(path.read_text()).get(f"level{level}", {}) if path.exists() else {}
        for file, row in data.items():
            out.setdefault(file, {})[key] = row.get("mean")
    return out



class Bench:
    """One run: what to do next, and each step through the product's services."""

    def __init__(self, *, report: dict, report_path, suite: Suite, sweep_name: str,
                 device: str, candidates: int, deadline: float, say, missing: dict):
        self.report, self.path, self.suite = report, report_path, suite
        self.worker: EvaluatorChild | None = None  # set by run()
        self.sweep_name, self.device, self.candidates = sweep_name, device, candidates
        self.deadline, self.say = deadline, say
        self.missing = missing  # file -> modules its source imports that are not installed
        self.published: dict[int, dict] = {}  # level -> KernelBench's H100 baselines by file

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def todo(self, limit: int) -> list:
        members = list(self.suite.members.select_related("problem"))
        guesses = {m.pk: family_guess(m.problem.source) for m in members}
        done = {file for file, row in self.report["problems"].items() if row.get("done")}
        ordered = [m for m in known_first(members, guesses) if _file(m) not in done]
        for m in ordered:
            m.guess = guesses[m.pk]
        return ordered[:limit] if limit else ordered

    def run(self, members: list, batch: int, worker: EvaluatorChild, memory_budget: int | None = None) -> None:
        self.worker = worker
        longest = 0.0
        for group in batches(members, batch, memory_budget):
            # No batch that would likely be cut by the deadline: it would be done again next run.
            if self.left() <= 0 or self.left() < 0.8 * longest:
                self.say(f"{self.left():.0f} s left, a batch took {longest:.0f} s: the rest stays for the next run")
                return
            began = time.monotonic()
            self.batch(group)
            longest = max(longest, time.monotonic() - began)

    def batch(self, members: list) -> None:
        problems = [m.problem for m in members]
        for problem in problems:
            problem.refresh_from_db()
            if problem.validation_status in WAITING and not problem.jobs.filter(
                    purpose=EvaluationJob.Purpose.VALIDATE, status__in=EvaluationJob.UNFINISHED).exists():
                services.problem_request_validation(problem=problem, user=None)
        self.say(f"validating {', '.join(_file(m) for m in members)}")
        self.worker.wait(lambda: self.left() <= 0 or not Problem.objects.filter(
            pk__in=[p.pk for p in problems], validation_status__in=WAITING).exists())
        for m in members:
            m.problem.refresh_from_db()
            self.row(m).update(validation=_validation(m.problem), family=m.problem.family,
                               missing_modules=self.missing.get(_file(m), []))
        valid = [m for m in members if m.problem.validation_status == Problem.Validation.OK]
        for m, result in zip(valid, self.do_bench([m.problem for m in valid])):
            self.row(m)["do_bench"] = result
        self.searches([m for m in members if m.problem.validation_status == Problem.Validation.OK])
        for m in members:
            self.finish(m)
        self.scores()
        save_report(self.path, self.report)

    def row(self, member) -> dict:
        file = _file(member)
        row = self.report["problems"].setdefault(file, {})
        row.update(level=member.level, number=member.number, file=file, name=member.problem.name,
                   family_guess=getattr(member, "guess", None))
        if member.level is not None:
            if member.level not in self.published:
                self.published[member.level] = published_baselines(member.level)
            row["h100_ms"] = self.published[member.level].get(file, {})
        return row

    def do_bench(self, problems: list) -> list[dict]:
        """Each problem's eager model timed by triton's do_bench (and the runner's timer) in a sandbox
        of its own, one after another, alone on the device: the worker has nothing queued, and every
        sandbox is warm (torch imported, CUDA initialised) before the first one times."""
        if self.device != Device.CUDA:
            return [{"status": "skipped", "reason": "triton.testing.do_bench needs CUDA"} for _ in problems]
        results = []
        with runner.Pool(device=self.device, size=0) as pool:
            sandboxes = [pool.take() for _ in problems]
            for sandbox in sandboxes:
                sandbox.wait_ready()
            for problem, sandbox in zip(problems, sandboxes):
                if self.left() <= 0:
                    sandbox.discard()
                    results.append({})
                    continue
                # The problem's own Model, judged as the kernel: the eager forward that validation timed.
                kernel = problem.source + "\n\nModelNew = Model\n"
                outcome = sandbox.run({"job": "do_bench", "device": self.device, "seed": 0,
                                       "problem_source": problem.source, "kernel_source": kernel}, 300)
                result = outcome.result or {"status": "error", "reason": outcome.reason}
                # the GPU's clocks around the reference, measured again while held back (as a baseline is)
                result["measurements"] = sandbox.measurements.of("do_bench")
                result["noisy"] = sandbox.measurements.noisy("do_bench")
                eager = problem.baseline.get("eager_ms")
                if result.get("do_bench_ms") and eager:
                    result["eager_vs_do_bench"] = (eager - result["do_bench_ms"]) / result["do_bench_ms"]
                    result["within_target"] = abs(result["eager_vs_do_bench"]) <= DO_BENCH_TARGET
                results.append(result)
        return results

    def searches(self, members: list) -> None:
        started = []
        with Engines() as engines:
            for m in members:
                reason = selectors.search_proposer_unavailable(problem=m.problem, proposer="playbook",
                                                               device=self.device)
                if reason or self.left() <= 0:
                    self.row(m)["search"] = {"status": "skipped", "reason": reason or "time is up"}
                    continue
                services.suite_import(user=None, suite_name=self.sweep_name, device=self.device,
                                      files=[(_file(m), m.problem.source.encode())])
                try:
                    search = services.search_start(
                        problem=m.problem, user=None, proposer="playbook", device=self.device, rounds=1,
                        parents_per_round=1, ideas_per_parent=max(1, self.candidates - 1), kernels_per_idea=1,
                        max_candidates=self.candidates, name=f"{self.sweep_name}: {m.problem.name}")
                except ValidationError as error:
                    self.row(m)["search"] = {"status": "refused", "reason": " ".join(error.messages)}
                    continue
                engines.start(search.id)
                started.append((m, search))
            ids = [s.id for _, s in started]
            self.worker.wait(lambda: self.left() <= 0 or not _active(ids))
        for m, search in started:
            search.refresh_from_db()
            cut = search.status in Search.ACTIVE or _active([search.id])  # by this run's deadline
            if search.status in Search.ACTIVE:
                services.search_pause(search=search, user=None)
                search.refresh_from_db()
            best = selectors.search_leaderboard(search=search, limit=1)
            self.row(m)["search"] = {
                "status": search.status, "stop_reason": search.stop_reason, "code": str(search.code),
                "candidates": search.candidates_evaluated, "verdicts": selectors.search_counts(search=search),
                "best_ms": best[0].median_ms if best else None,
                "best_kernel": best[0].name if best else None,
                "speedup_vs_eager": best[0].speedup_vs_eager if best else None,
                "speedup_vs_compile": best[0].speedup_vs_compile if best else None, "cut_by_deadline": cut,
            }

    def finish(self, member) -> None:
        row = self.row(member)
        status = (row.get("validation") or {}).get("status")
        search = (row.get("search") or {}).get("status")
        if status in WAITING:
            row["done"] = False  # time ran out before its validation ended
        elif status != Problem.Validation.OK:
            row["done"] = True
        else:
            # A search the engine paused itself (the playbook could not read the problem) is an outcome;
            # one paused on kernels the worker could not run (no verdict) is swept again next time.
            unjudged = search == Search.Status.PAUSED and (row["search"].get("verdicts") or {}).get("failed")
            row["done"] = bool(row.get("do_bench")) and search is not None and not row["search"].get("cut_by_deadline") \
                and row["search"].get("reason") != "time is up" and not unjudged


    def scores(self) -> None:
        """The sweep's scores as the suite page computes them, over every problem swept in any run:
        this database's rows (the sweep suite's export) replace the report's rows of the same
        problems, and the rest are kept, so a run on a fresh database continues the sweep."""
        sweep = Suite.objects.filter(name=self.sweep_name).first()
        if sweep is None:
            return
        rows = {score["device_name"]: {r["file"]: r for r in score["rows"]}
                for score in (self.report.get("sweep") or {}).get("scores", [])}
        fresh = {score["device_name"]: {r["file"]: {k: r[k] for k in SWEEP_ROW} for r in score["rows"]}
                 for score in selectors.suite_scores_export(sweep)["scores"]}
        for device in set(rows) | set(fresh):
            # A problem swept here that ran no kernel on this device (the playbook could not read it)
            # still counts, as on the suite page: a row without a kernel.
            rows.setdefault(device, {}).update({m.file_name: fresh.get(device, {}).get(m.file_name) or {
                "number": m.number, "file": m.file_name, "outcome": "none", "speedup_vs_eager": None,
                "speedup_vs_compile": None} for m in sweep.members.all()})
        self.report["sweep"] = {
            "suite": sweep.name, "measured_at": timezone.now().isoformat(),
            "scores": [{"device_name": device,
                        **{k: v for k, v in selectors.rows_score(list(by_file.values())).items() if k != "table"},
                        "rows": sorted(by_file.values(), key=lambda r: r["number"] or 0)}
                       for device, by_file in sorted(rows.items())],
        }


def memory_need(problem: Problem) -> int | None:
    """Device bytes a problem takes while its batch runs, estimated: MEMORY_FACTOR times its tensors
    (validation's measure, else the inputs read from the source); None when neither is known."""
    known = problem.min_bytes or input_bytes(problem.source)
    return int(MEMORY_FACTOR * known) if known else None


def batches(members: list, most: int, budget: int | None) -> list[list]:
    """The members in order, in batches of at most `most` whose memory needs fit `budget` together
    (no budget: `most` at a time). A problem of unknown need, or one past the budget, goes alone."""
    out, current, used = [], [], 0
    for member in members:
        need = memory_need(member.problem) if budget else 0
        alone = bool(budget) and (need is None or need > budget)
        full = len(current) == most or (bool(budget) and used + (need or 0) > budget)
        if current and (alone or full):
            out.append(current)
            current, used = [], 0
        current.append(member)
        used += need or 0
        if alone:
            out.append(current)
            current, used = [], 0
    return out + ([current] if current else [])


def _file(member) -> str:
    return Path(member.file_name).name


def _active(search_ids: list[int]) -> bool:
    if Search.objects.filter(pk__in=search_ids, status__in=Search.ACTIVE).exists():
        return True
    return EvaluationJob.objects.filter(kernel__search_id__in=search_ids, status__in=EvaluationJob.UNFINISHED).exists()


def _validation(problem: Problem) -> dict:
    baseline = problem.baseline
    return {"status": problem.validation_status, "reason": problem.validation_reason,
            "eager_ms": baseline.get("eager_ms"), "compile_ms": baseline.get("compile_ms"),
            "compile_mode": baseline.get("compile_mode"), "noisy": (problem.validation or {}).get("noisy"),
            "device_name": (problem.validation or {}).get("environment", {}).get("device_name")}


def summary(report: dict) -> dict:
    rows = list(report["problems"].values())
    done = [r for r in rows if r.get("done")]
    statuses = {}
    for r in done:
        key = (r.get("validation") or {}).get("status")
        statuses[key] = statuses.get(key, 0) + 1
    benched = [r["do_bench"] for r in done if (r.get("do_bench") or {}).get("eager_vs_do_bench") is not None]
    searched = [r for r in done if (r.get("search") or {}).get("status") not in (None, "skipped", "refused")]
    return {"done": len(done), "validation": statuses, "do_bench_measured": len(benched),
            "do_bench_within_3pct": sum(1 for b in benched if b.get("within_target")),
            "do_bench_noisy": sum(1 for b in benched if b.get("noisy")), "playbook_searches": len(searched)}


def table(report: dict) -> list[str]:
    """The report as terminal lines, one per problem done, in KernelBench order."""
    lines = [f"{'#':>3} {'problem':<40} {'valid':<7} {'family':<12} {'eager':>8} {'compile':>8} {'do_bench':>8} "
             f"{'diff':>6} {'H100':>7} {'best':>8} {'x eager':>7} {'x comp':>7}"]

    def ms(value):
        return f"{value:.3f}" if isinstance(value, (int, float)) else "-"

    def x(value):
        return f"{value:.2f}" if isinstance(value, (int, float)) else "-"

    for row in sorted(report["problems"].values(), key=lambda r: (r.get("level") or 0, r.get("number") or 0)):
        v, b, s = row.get("validation") or {}, row.get("do_bench") or {}, row.get("search") or {}
        diff = b.get("eager_vs_do_bench")
        lines.append(
            f"{row.get('number') or '':>3} {row['file'][:40]:<40} {str(v.get('status'))[:7]:<7} "
            f"{(row.get('family') or '-')[:12]:<12} {ms(v.get('eager_ms')):>8} {ms(v.get('compile_ms')):>8} "
            f"{ms(b.get('do_bench_ms')):>8} {f'{diff:+.1%}' if diff is not None else '-':>6} "
            f"{ms((row.get('h100_ms') or {}).get('eager')):>7} {ms(s.get('best_ms')):>8} "
            f"{x(s.get('speedup_vs_eager')):>7} {x(s.get('speedup_vs_compile')):>7}")
        if v.get("status") not in (None, "ok"):
            lines.append(f"    {v.get('status')}: {(v.get('reason') or '')[:150]}")
        if v.get("noisy"):
            lines.append(f"    baseline marked noisy: {v['noisy'][:150]}")
        if b.get("noisy"):
            lines.append(f"    do_bench reference noisy: {b['noisy'][:150]}")
    for score in (report.get("sweep") or {}).get("scores", []):
        for baseline in ("eager", "compile"):
            fast = score["fast_p"][baseline]
            lines.append(f"sweep on {score['device_name']} vs {baseline}: " + ", ".join(
                f"{label} {fast[label]['count']}/{score['problems']}" for label in ("fast_0", "fast_1", "fast_2"))
                + f", geomean {x(score['geomean'][baseline])}")
    return lines
