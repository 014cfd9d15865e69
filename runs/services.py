"""Writes on runs: a folder of solutions re-judged as one run, and searches started as one run."""

from django.core.exceptions import ValidationError
from django.db import transaction

from searches import services as searches
from searches.config import SEARCH_CONFIG as CONFIG
from searches.models import Suite

from .models import Rule, Run, RunKernel, RunSearch

# The search configuration's shape and budgets, as a run states them.
_SHAPE = ("rounds", "parents_per_round", "ideas_per_parent", "kernels_per_idea", "max_candidates", "max_tokens",
          "max_cost_usd")


def _new_run(*, suite: Suite, name: str, user, **config) -> Run:
    name = (name or "").strip()[:200]
    if not name:
        raise ValidationError("Give the run a name.", code="name")
    if Run.objects.filter(suite=suite, name=name).exists():
        raise ValidationError(f"The suite “{suite.name}” already has a run named “{name}”.", code="name")
    return Run.objects.create(suite=suite, name=name, created_by=user, **config)


def _baselines(asked) -> list[str]:
    """The extra baselines asked for, in the runner's order; refused in the search setting's words."""
    refusal = CONFIG.baselines.refusal(list(asked or ()))
    if refusal:
        raise ValidationError(refusal, code="baselines")
    return [kind for kind, _ in CONFIG.baselines.choices if kind in asked]


@transaction.atomic
def run_rejudge(*, user, suite: Suite, files, name: str, allow_library: bool = False, rule: str = Rule.KERNELLAB,
                baselines=(), progress=None):
    """Judge a folder of solutions (KernelBench's runs layout or the older ones) as one run: each
    file becomes a kernel of the problem with its level and number, keeping its sample id, judged by
    the run's correctness rule (KernelLab's, or KernelBench's in the runner)."""
    files = list(files)
    if rule not in Rule.values:
        raise ValidationError(f"No correctness rule named “{rule}”.", code="rule")
    baselines = _baselines(baselines)
    run = _new_run(suite=suite, name=name, user=user, source=Run.Source.REJUDGE, allow_library=allow_library,
                   rule=rule, baselines=baselines)
    rows = searches.suite_sweep(user=user, suite=suite, files=files, progress=progress, allow_library=allow_library,
                                rule=rule, baselines=baselines)
    members = {m.problem_id: m for m in suite.members.all()}
    entries = [RunKernel(run=run, member=members[row.problem.pk], kernel=row.kernel, sample=row.sample)
               for row in rows if row.kernel is not None]
    RunKernel.objects.bulk_create(entries)
    run.samples = max((e.sample for e in entries), default=-1) + 1
    run.save(update_fields=["samples"])
    return run, rows


@transaction.atomic  # a request refused whole (OverQuota) leaves no empty run behind
def run_start_searches(*, user, suite: Suite, name: str, **search_fields):
    """Start one search configuration on every problem of the suite as one run (sample 0 each); the
    extra baselines its searches ask the runner for (`baselines`) are the run's own."""
    baselines = search_fields["baselines"] = _baselines(search_fields.get("baselines"))
    run = _new_run(suite=suite, name=name, user=user, source=Run.Source.SEARCH,
                   proposer=search_fields.get("proposer", ""), model=search_fields.get("model", ""),
                   language=search_fields.get("language", ""),
                   allow_library=bool(search_fields.get("allow_library")), baselines=baselines,
                   shape={key: search_fields[key] for key in _SHAPE if key in search_fields})
    rows = searches.suite_start_searches(user=user, suite=suite, name=name, **search_fields)
    RunSearch.objects.bulk_create([RunSearch(run=run, member=row.member, search=row.search, sample=0)
                                   for row in rows if row.search is not None])
    return run, rows
