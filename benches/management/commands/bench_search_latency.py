"""`python manage.py bench_search_latency`: an LLM search's wall time against its model's latency.

A search with the Anthropic proposer (a default search's settings unless told otherwise) runs through
the real engine, the real `anthropic` client, a child evaluator and its sandboxes, against a local
stand-in for the Messages API whose replies take a model's time (ideas 20 s, kernels 45 s, repairs
30 s by default, each beginning 2 s in; `--scale` shrinks them all). Its "model" writes the
playbook's kernels for the problem's family, with a share of them broken so that they do not parse
and are repaired, and repeats some (as models do: those are judged once).
By default on a temporary SQLite file (the user's data is never touched).

It prints: wall time, the serial sum of the calls' latencies (a call still in flight when
`--max-seconds` closes the window counts for its seconds inside it) and the ratio, the time any
call was in flight, calls in flight (most, mean), the evaluator's idle time while calls were pending, tokens and cost
per correct kernel, evaluations saved by sources judged once, and the evidence: how many ideas requests
carried a round's top kernels' profile (and how many of those Nsight Compute's counters), and what the
kernel page shows of it; then where the wall time went: the calls in flight in each 30 s, when each round
began, how long each counter rerun took from its queueing.
"""

import html
import itertools
import json
import os
import re
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from benches.harness import bench_worker, rerun_on_database
from evaluation.models import EvaluationJob
from live.models import SearchEvent
from proposers.base import IdeaProposal, ProblemContext
from proposers.playbook import PlaybookProposer
from searches import services
from searches.foreground import Engines, problem_for, validated
from searches.config import SEARCH_CONFIG as CONFIG
from searches.models import Device, Kernel, ProposerCall, Search

DEFAULT_PROBLEM = {"cuda": "softmax-4096x65536", "cpu": "softmax-cpu"}


class Command(BaseCommand):
    help = "Measure an LLM search's wall time against its model's latency (a local stand-in for the API)."

    def add_arguments(self, parser):
        parser.add_argument("--device", choices=Device.values, default=settings.RUNNER_DEVICE)
        parser.add_argument("--problem", default="", help="catalog key (default softmax-4096x65536 / softmax-cpu)")
        parser.add_argument("--ideas-s", type=float, default=20.0, help="an ideas reply's latency (default 20 s)")
        parser.add_argument("--kernels-s", type=float, default=45.0, help="a kernel reply's latency (default 45 s)")
        parser.add_argument("--repairs-s", type=float, default=30.0, help="a repair reply's latency (default 30 s)")
        parser.add_argument("--first-token-s", type=float, default=2.0,
                            help="of each reply's latency, before it begins (the prompt read and cached; default 2 s)")
        parser.add_argument("--scale", type=float, default=1.0, help="multiplies every latency (e.g. 0.1)")
        parser.add_argument("--broken", type=float, default=0.25, help="share of kernel replies that do not compile")
        # a default search unless told otherwise: its wall time against its serial sum is the measure
        for option, setting in (("rounds", CONFIG.rounds), ("parents", CONFIG.parents_per_round),
                                ("ideas", CONFIG.ideas_per_parent), ("kernels", CONFIG.kernels_per_idea),
                                ("bank", CONFIG.bank_size), ("repairs", CONFIG.repair_attempts)):
            parser.add_argument(f"--{option}", type=int, default=setting.default,
                                help=f"{setting.label} (default {setting.default}, a default search's)")
        parser.add_argument("--max-seconds", type=float, default=1800.0)
        parser.add_argument("--json", default="", help="also write the report to this file")
        parser.add_argument("--database", default="", help="a DATABASE_URL instead of a temporary SQLite file")
        parser.add_argument("--here", action="store_true", help="(internal) run in this process's database")

    def handle(self, *args, **opts):
        if not opts["here"]:
            arguments = [f"--{k.replace('_', '-')}={opts[k]}" for k in (
                "device", "problem", "ideas_s", "kernels_s", "repairs_s", "first_token_s", "scale", "broken", "rounds",
                "parents", "ideas", "kernels", "bank", "repairs", "max_seconds", "json") if opts[k] not in ("", None)]
            sys.exit(rerun_on_database("bench_search_latency", arguments, opts["device"], opts["database"]))
        from tests.fakes.anthropic_server import FakeAnthropic, task_of  # the stand-in the tests use

        device = opts["device"]
        latency = {"ideas": opts["ideas_s"], "kernel": opts["kernels_s"], "starting kernel": opts["kernels_s"],
                   "repair": opts["repairs_s"]}
        worker = bench_worker("bench_search_latency", "latency", device, None, None)
        with worker:
            problem = validated(problem_for(opts["problem"] or DEFAULT_PROBLEM[device], self.stderr.write), worker,
                                self.stderr.write)
            model = PlaybookModel(problem, device, opts["broken"])
            with FakeAnthropic(responder=model, latency=lambda seen: latency.get(task_of(seen), 1.0) * opts["scale"],
                               first_token_s=opts["first_token_s"] * opts["scale"]) as fake:
                settings.ANTHROPIC_BASE_URL = fake.url
                os.environ["ANTHROPIC_API_KEY"] = "sk-ant-local-stand-in"  # the evaluator child never gets it
                began = time.monotonic()
                with Engines() as engines:
                    search = services.search_start(
                        problem=problem, user=None, proposer="anthropic", model="claude-sonnet-4-6", device=device,
                        rounds=opts["rounds"], parents_per_round=opts["parents"], ideas_per_parent=opts["ideas"],
                        kernels_per_idea=opts["kernels"], bank_size=opts["bank"], repair_attempts=opts["repairs"],
                        name="search latency benchmark")
                    engines.start(search.id)
                    worker.wait(lambda: time.monotonic() - began > opts["max_seconds"] or engines.died()
                                or Search.objects.get(pk=search.id).status in Search.FINISHED)
                    wall = time.monotonic() - began
                    spans = [(a - began, b - began) for a, b, *_ in fake.spans]
                    # calls still in flight at the close count for their time inside the window
                    spans += [(a - began, wall) for a in fake.open_since()]
                    _pause_if_active(search)  # at --max-seconds: its calls in flight are abandoned, the thread ends
        report = measure(search, spans, wall, fake.max_in_flight)
        report.update(evidence(search, model))
        for line in table(report):
            self.stdout.write(line)
        if opts["json"]:
            Path(opts["json"]).write_text(json.dumps(report, indent=2) + "\n")


def _pause_if_active(search: Search) -> None:
    try:
        services.search_pause(search=Search.objects.get(pk=search.pk), user=None)
    except ValidationError:
        pass  # it finished (or failed) meanwhile


# What a real model's analysis looks like, so the kernel pages and the stored replies of a bench have one.
STAND_IN_ANALYSIS = {"bottleneck": "memory traffic: each row is read twice", "plan": "one pass with a running max and sum",
                     "expected_speedup": 1.3}


class PlaybookModel:
    """A "model" whose kernel replies are the playbook's kernels for the problem's family, cycled,
    every n-th one broken so that it does not parse (a repair then gets a working one)."""

    def __init__(self, problem, device: str, broken: float):
        playbook = PlaybookProposer()
        shown = ProblemContext(name=problem.name, source=problem.source, device=device, family=problem.family)
        sources = [playbook.starting_kernel(shown)[0].source]
        for idea in playbook.ideas(shown, None, [], 50)[0]:
            for variant in range(8):
                proposal, _ = playbook.kernel(shown, None, IdeaProposal(idea.title, idea.description), variant)
                if not proposal.source:
                    break
                sources.append(proposal.source)
        if not sources:
            raise CommandError(f"the playbook writes no kernel for {problem.name}")
        self.sources = itertools.cycle(sources)
        self.every = max(2, round(1 / broken)) if broken > 0 else 0
        self.count, self.ideas = 0, 0
        self.profiles_seen: list[str] = []  # the profile section of each ideas request that carried one

    def __call__(self, seen):
        from tests.fakes.anthropic_server import asked_counts, ideas_call, kernel_call, task_of

        task = task_of(seen)
        if task == "ideas":
            self.ideas += 1
            asked = seen.system_text + seen.user_text  # the bank sits in the system blocks
            if "bottleneck:" in asked:
                shown = asked[asked.index("bottleneck:"):]
                self.profiles_seen.append(shown[:shown.find("<<<END")].strip())
            count, briefs = asked_counts(seen)
            return ideas_call(count, briefs, prefix=f"Idea set {self.ideas},")
        self.count += 1
        source = next(self.sources)
        if task != "repair" and self.every and self.count % self.every == 0:
            source = source.replace("ModelNew(", "ModelNew(  # (an unclosed bracket follows\n    [", 1)
        return kernel_call(source, note="from the local stand-in", analysis=STAND_IN_ANALYSIS)


def measure(search: Search, spans: list[tuple[float, float]], wall: float, most: int) -> dict:
    search.refresh_from_db()
    busy = _union(spans)
    jobs = [(j.started_at, j.finished_at) for j in EvaluationJob.objects.filter(kernel__search=search)
            if j.started_at and j.finished_at]
    origin = search.created_at  # the spans count from just before the search was created
    judging = [((a - origin).total_seconds(), (b - origin).total_seconds()) for a, b in jobs]
    kernels = Kernel.objects.filter(search=search)
    correct = kernels.filter(status="correct").count()
    calls = ProposerCall.objects.filter(search=search)
    serial = sum(b - a for a, b in spans)
    return {
        "wall_s": round(wall, 1), "serial_latency_s": round(serial, 1),
        "wall_over_serial": round(wall / serial, 3) if serial else None,
        "model_busy_s": round(busy, 1), "model_share": round(busy / wall, 3) if wall else None,
        "calls": calls.count(), "calls_in_flight_max": most,
        "calls_in_flight_mean": round(serial / busy, 2) if busy else 0,
        "evaluator_idle_while_calls_pending_s": round(_idle_while(spans, judging), 1),
        "kernels": kernels.count(), "correct": correct,
        "evaluations_saved_by_dedup": kernels.filter(duplicate_of__isnull=False).count(),
        "tokens_per_correct": round((search.tokens_in + search.tokens_out) / correct) if correct else None,
        "cost_per_correct_usd": round(search.cost_usd / correct, 4) if correct else None,
        "status": search.status, "stop_reason": search.stop_reason,
        # where the wall time went: the calls in flight over time, the rounds' starts, the counters' waits
        "calls_in_flight_by_30s": _in_flight_by(spans, wall, 30.0),
        "round_starts_s": [round((e.created_at - origin).total_seconds(), 1)
                           for e in SearchEvent.objects.filter(search=search, kind="round.started").order_by("seq")],
        "counter_reruns_s": [round((j.finished_at - j.created_at).total_seconds(), 1) for j in EvaluationJob.objects
                             .filter(kernel__search=search, options__counters=True, finished_at__isnull=False)
                             .order_by("id")],
    }


def _in_flight_by(spans: list[tuple[float, float]], wall: float, width: float) -> list[float]:
    """The mean number of calls in flight in each `width`-second slice of the wall time."""
    slices, start = [], 0.0
    while start < wall:
        end = min(start + width, wall)
        inside = sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)
        slices.append(round(inside / (end - start), 1))
        start = end
    return slices


def evidence(search: Search, model: PlaybookModel) -> dict:
    """Whether the round's top kernels' profiles reached the next ideas requests and the kernel page."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from searches import selectors

    fastest = Kernel.objects.filter(search=search, status="correct").order_by("median_ms")
    with_profile = (k for k in fastest if selectors.kernel_profile(selectors.kernel_runs(kernel=k))[1])
    profiled = list(itertools.islice(with_profile, search.profiled_kernels))
    page = ""
    if profiled:
        client = Client()
        client.force_login(get_user_model().objects.get_or_create(username="bench-latency")[0])
        shown = client.get(f"/kernels/{profiled[0].code}/").content.decode()
        found = re.search(r'<p id="bottleneck">(.*?)</p>.*?<dd id="profile-counters">(.*?)</dd>', shown, re.S)
        page = (" | ".join(html.unescape(re.sub(r"<[^>]+>", "", part)).strip() for part in found.groups())
                if found else "(not shown)")
    return {"profiled_kernels": len(profiled),
            "ideas_requests_with_a_profile": f"{len(model.profiles_seen)} of {model.ideas}",
            "ideas_requests_with_counters": f"{sum('Nsight Compute' in p for p in model.profiles_seen)} of {model.ideas}",
            "counters_in_an_ideas_request": next((p for p in model.profiles_seen if "Nsight Compute" in p), ""),
            "profile_in_an_ideas_request": model.profiles_seen[0] if model.profiles_seen else "",
            "profile_on_the_kernel_page": page}


def _union(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _idle_while(calls, judging) -> float:
    """Seconds with a call in flight and no evaluation running, on a 0.1 s grid."""
    if not calls:
        return 0.0
    last = max(b for _, b in calls)
    idle = 0.0
    for tick in range(int(last * 10)):
        t = tick / 10
        if any(a <= t < b for a, b in calls) and not any(a <= t < b for a, b in judging):
            idle += 0.1
    return idle


def table(report: dict) -> list[str]:
    width = max(len(k) for k in report)
    return [f"{key.ljust(width)}  {value}" for key, value in report.items()]
