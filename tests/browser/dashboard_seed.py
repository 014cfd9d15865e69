"""Rows for the dashboard's browser tests, written by a separate process (`manage.py shell`)
into the running stack's database, the way the task queue and the evaluator write them."""

import json
import textwrap

PRELUDE = """
import json
from django.contrib.auth import get_user_model
from live.events import SEARCH, last_seq
from tests.searches import dashboard_data as d
owner = get_user_model().objects.get(username="e2e")
"""


def run(stack, body: str) -> dict:
    """Run `body` (Python; it sets `out`, a JSON-able dict) in the stack's environment."""
    code = PRELUDE + textwrap.dedent(body) + "\nprint('SEED:' + json.dumps(out))\n"
    done = stack.manage("shell", "-c", code, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"seeding failed:\n{done.stdout}\n{done.stderr}")
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("SEED:")][-1]
    return json.loads(line[5:])


def small_search(stack, name="seeded search", status="paused") -> dict:
    """seed -> idea -> (fast, broken) ; fast -> idea -> faster. The real engine leaves the seeded rows be:
    the search is paused by default, and a running or queued one is leased to another engine for an hour
    (the stack's engine re-kicks active searches every minute, and would finish one its playbook cannot serve).
    On cuda, as its kernels are timed on an H200: ranked by median."""
    return run(stack, f"""
from datetime import timedelta
from django.utils import timezone
p = d.problem(name={name!r} + " problem", device="cuda")
s = d.search(problem=p, created_by=owner, name={name!r}, status={status!r}, device="cuda")
if s.status in type(s).ACTIVE:
    type(s).objects.filter(pk=s.pk).update(engine_lease_owner="another engine",
                                           engine_lease_until=timezone.now() + timedelta(hours=1))
seed = d.kernel(problem=p, search=s, round=0, median_ms=1.0, name="seed kernel", publish=True)
i1 = d.idea(search=s, parent_kernel=seed, title="Vectorise the loads", publish=True)
fast = d.kernel(problem=p, search=s, idea=i1, parent=seed, median_ms=0.5, name="fast kernel", publish=True,
                source=seed.source.replace("clamp_min(0)", "relu()  # vectorised"))
broken = d.kernel(problem=p, search=s, idea=i1, parent=seed, status="compile_error", name="broken kernel",
                  publish=True)
i2 = d.idea(search=s, parent_kernel=fast, title="Fuse the epilogue", round=2, publish=True)
faster = d.kernel(problem=p, search=s, idea=i2, parent=fast, round=2, median_ms=0.25, name="faster kernel",
                  publish=True)
s.refresh_from_db()
out = dict(problem=str(p.code), search=str(s.code), search_id=s.id, seq=last_seq(SEARCH, s.id),
           seed=str(seed.code), fast=str(fast.code), broken=str(broken.code), faster=str(faster.code),
           fast_id=fast.id, i2=i2.id, problem_id=p.id)
""")


def add_kernels(stack, search_id: int, parent_idea: int, names: list[str], title: str = "") -> dict:
    """Another process appends kernels (and optionally a new idea) to a search, publishing events."""
    return run(stack, f"""
from searches.models import Idea, Search
s = Search.objects.get(pk={search_id})
idea = Idea.objects.get(pk={parent_idea})
if {title!r}:
    idea = d.idea(search=s, parent_kernel=idea.kernels.first(), title={title!r}, round=3, publish=True)
made = [d.kernel(problem=s.problem, search=s, idea=idea, parent=idea.parent_kernel, round=idea.round,
                 name=n, median_ms=0.3 + k / 100, publish=True) for k, n in enumerate({names!r})]
s.refresh_from_db()
out = dict(ids=[k.id for k in made], seq=last_seq(SEARCH, s.id), idea=idea.id)
""")


def big_search(stack) -> dict:
    """The dashboard bench's finished-looking search: 2,000 kernels, 499 ideas over 5 rounds."""
    return run(stack, """
from benches.harness import make_search
s = make_search(owner, 2000)
seed = s.kernels.get(origin="seed")
child = s.kernels.filter(idea__parent_kernel=seed).order_by("id").first()
out = dict(search=str(s.code), search_id=s.id, kernels=s.kernels.count(), ideas=s.ideas.count(), seed=seed.id,
           seed_code=str(seed.code), child=child.id, child_code=str(child.code), idea=child.idea_id,
           seq=last_seq(SEARCH, s.id))
""")


def board_extras(stack, seeded: dict) -> dict:
    """What a real board holds beside one search: a paused fork carrying copies of its path (as
    the fork service copies them), a hand-written kernel slower than eager, a round that ranked
    nothing, and one stalled timing sample on the "faster" kernel."""
    return run(stack, f"""
from searches.models import BenchmarkRun, Kernel, Search
s = Search.objects.get(code={seeded['search']!r})
fork = d.search(problem=s.problem, created_by=owner, name="fork of " + s.name, status="paused", forked_from=s)
for original in Kernel.objects.filter(search=s, status="correct").order_by("id"):
    d.kernel(problem=s.problem, search=fork, round=0, origin="fork", source=original.source,
             median_ms=original.median_ms, name=f"{{original.name}} (#{{original.id}} of search {{s.id}})")
# Its own source: dashboard_data's counter restarts in each seeding process, so defaults repeat.
d.kernel(problem=s.problem, origin="user", author=owner, median_ms=1.3, name="hand-written attempt",
         source=s.kernels.get(name="seed kernel").source + "  # unrolled by hand")
# Round 3 ranked nothing (one crash), round 4 did: the speedup chart shows the gap.
faster = s.kernels.get(name="faster kernel")
d.kernel(problem=s.problem, search=s, parent=faster, round=3, status="crashed", name="crashed in round 3")
d.kernel(problem=s.problem, search=s, parent=faster, round=4, median_ms=0.2, name="round 4 kernel",
         source=faster.source + "  # round 4")
run = BenchmarkRun.objects.get(kernel__code={seeded['faster']!r})
run.timing = {{**run.timing, "samples_ms": run.timing["samples_ms"][:49] + [4.19]}}
run.save()
out = dict(fork=str(fork.code))
""")


def paired_cpu_search(stack) -> dict:
    """Issue 36's LayerNorm-CPU: a quiet-host kernel with the faster median but 0.83x the eager timed
    beside it, and a loaded-host kernel at 1.15x its paired eager (searches/selectors/speedups.py)."""
    return run(stack, """
from searches.models import BenchmarkRun, Kernel
p = d.problem(name="LayerNorm paired", device="cpu")
s = d.search(problem=p, created_by=owner, name="paired search", status="paused", device="cpu")
made = {}
for name, ms, speedup, eager_ms in (("quiet", 0.0506, 0.83, 0.042), ("loaded", 0.21, 1.15, 0.2415)):
    k = d.kernel(problem=p, search=s, median_ms=ms, name=name, device_name="cpu", publish=True)
    Kernel.objects.filter(pk=k.pk).update(speedup_vs_eager=speedup)
    BenchmarkRun.objects.filter(kernel=k).update(speedup_vs_eager=speedup, result={
        "status": "correct", "paired": {"eager_ms": eager_ms, "speedup": speedup, "dropped": "", "blocks": 8}})
    made[name] = str(k.code)
out = dict(problem=str(p.code), search=str(s.code), **made)
""")
