"""Reads: the idea bank's outcomes, from the searches a person may see; memory/bank.py does the arithmetic.

Computed from the ideas and kernels as they stand, not from a table of their own: a kernel quarantined,
approved or reproduced later counts as it is now, and nothing has to be kept in step. The queries are
one per table (ideas of one op family, their kernels, the reruns), so a prompt pays milliseconds."""

import re

from django.db.models import Count

from memory import bank
from memory.keys import TECHNIQUES, IdeaKey, shape_class
from proposers.prompts import LANGUAGES, language_of
from searches.models import Idea, Kernel, ProposerCall, Search, Verdict

from .kernels import kernel_is_trusted, rerun_kernel_ids, trusted_q
from .memory_scope import device_model, search_key, searches_visible_to

UNFINISHED = (Verdict.PENDING, Verdict.EVALUATING)
FAILED = (Verdict.INCORRECT, Verdict.REJECTED, Verdict.RUNTIME_ERROR, Verdict.TIMEOUT, Verdict.COMPILE_ERROR,
          Verdict.CRASHED, Verdict.OOM, Verdict.NO_CODE)
COUNTED = (Idea.Origin.LLM, Idea.Origin.PLAYBOOK)  # a person's idea has no technique tag and no prediction
REASON_CHARS = 100


def key_scope(key: IdeaKey) -> str:
    """What "similar" meant, in words: "softmax, small inputs, NVIDIA H200, CUDA through NVRTC (cupy)"."""
    return f"{key.family}, {key.shape_class} inputs, {key.device_model}, {LANGUAGES.get(key.language, (key.language,))[0]}"


def search_priors(search: Search) -> tuple[IdeaKey, list[bank.Stats], bank.Calibration | None]:
    """The search's key; the record on similar problems in the searches its owner may see, its own finished
    ideas included (the ratings move as the search learns, not only between searches); and how the search's
    ideas model's predictions held there."""
    key = search_key(search)
    visible = searches_visible_to(search.created_by, also=search)
    similar = [o for o in idea_outcomes(searches=visible, family=key.family) if key.similar(o.key)]
    # A vendor library is no technique to suggest where the search forbids library calls.
    untried = tuple(t for t in TECHNIQUES if search.allow_library or t != "library")
    return key, bank.priors(key, similar, untried=untried), bank.calibration_of(search.step_model("ideas"), similar)


def team_seeds(search: Search, count: int) -> list[Kernel]:
    """The best trusted kernels of similar problems (the same family and size class, device and language) in
    the searches its owner may see, by speedup over eager, one per source: where a new search may start."""
    key = search_key(search)
    similar = [s.id for s in searches_visible_to(search.created_by).exclude(pk=search.pk)
               .filter(problem__family=key.family, device=search.device).select_related("problem")
               if shape_class(s.problem.min_bytes) == key.shape_class and language_of(s) == key.language]
    kernels = (Kernel.objects.filter(trusted_q(), search_id__in=similar, speedup_vs_eager__isnull=False,
                                     duplicate_of__isnull=True).exclude(origin=Kernel.Origin.FORK)
               .select_related("problem").order_by("-speedup_vs_eager", "id"))
    chosen, sources = [], set()
    for kernel in kernels:
        if kernel.source_hash not in sources or not kernel.source_hash:
            chosen.append(kernel)
            sources.add(kernel.source_hash)
        if len(chosen) >= count:
            break
    return chosen


def points_per_dollar(search: Search, last: int, rounds: int) -> float | None:
    """Percent points of speedup the search's rounds last-rounds+1..last bought per dollar of their calls (the
    ideas and kernels of those rounds): the best trusted time before them against the best after. None when
    those rounds cost nothing (the playbook) or nothing ran before them."""
    ranked = Kernel.objects.filter(search=search, status=Verdict.CORRECT, quarantined=False, median_ms__isnull=False)
    before = ranked.filter(round__lt=last - rounds + 1).order_by("median_ms").values_list("median_ms", flat=True).first()
    after = ranked.filter(round__lte=last).order_by("median_ms").values_list("median_ms", flat=True).first()
    window = {"round__gt": last - rounds, "round__lte": last}
    dollars = sum(c or 0.0 for c in Kernel.objects.filter(search=search, **window).values_list("call__cost_usd", flat=True))
    ideas_calls = ProposerCall.objects.filter(ideas__search=search, ideas__round__gt=last - rounds,
                                              ideas__round__lte=last).distinct()  # one call, several ideas
    dollars += sum(cost for _, cost in ideas_calls.values_list("id", "cost_usd"))  # by id: equal costs both count
    if not before or not dollars:
        return None
    return max(0.0, before / after - 1.0) * 100 / dollars


def idea_outcomes(*, searches, family: str | None = None) -> list[bank.Outcome]:
    """One Outcome per finished idea (proposed by a model or the playbook) of `searches`."""
    ideas = Idea.objects.filter(search__in=searches, origin__in=COUNTED).select_related(
        "search__problem", "parent_kernel", "call")
    if family:
        ideas = ideas.filter(search__problem__family=family)
    ideas = list(ideas)
    kernels: dict[int, list[dict]] = {}
    for row in (Kernel.objects.filter(idea__in=[i.id for i in ideas]).exclude(origin=Kernel.Origin.FORK)
                .values("id", "idea_id", "status", "reason", "quarantined", "verified", "median_ms", "device_name",
                        "call__cost_usd").order_by("id")):
        kernels.setdefault(row["idea_id"], []).append(row)
    reran = rerun_kernel_ids([k["id"] for rows in kernels.values() for k in rows])
    shared = dict(Idea.objects.filter(call_id__in={i.call_id for i in ideas if i.call_id}).values("call_id")
                  .annotate(n=Count("id")).values_list("call_id", "n"))
    outcomes = []
    for idea in ideas:
        rows = kernels.get(idea.id, [])
        if not rows or any(k["status"] in UNFINISHED for k in rows):
            continue
        if all(k["status"] == Verdict.FAILED for k in rows):  # no verdict: the worker could not run them
            continue
        outcomes.append(_outcome(idea, rows, reran, shared))
    return outcomes


def _outcome(idea: Idea, rows: list[dict], reran: set, shared: dict) -> bank.Outcome:
    parent = idea.parent_kernel
    trusted = [k for k in rows if kernel_is_trusted(k, reran) and k["median_ms"]]
    gains = [parent.median_ms / k["median_ms"] for k in trusted if parent is not None and parent.median_ms]
    device = next((k["device_name"] for k in rows if k["device_name"]), "") or (parent.device_name if parent else "")
    problem = idea.search.problem
    key = IdeaKey(problem.family or "unknown", shape_class(problem.min_bytes), device_model(idea.search, device),
                  language_of(idea.search), idea.technique or "other")
    cost = sum(k["call__cost_usd"] or 0.0 for k in rows)
    if idea.call_id:
        cost += idea.call.cost_usd / shared.get(idea.call_id, 1)
    failures = tuple(dict.fromkeys(failure_text(k["status"], k["reason"]) for k in rows if k["status"] in FAILED))
    return bank.Outcome(
        key=key, idea_id=idea.id, search_id=idea.search_id, title=idea.title,
        model=(idea.call.model if idea.call_id else "") or idea.origin, gain=max(gains) if gains else None,
        expected=idea.expected_speedup, cost_usd=cost, failures=failures, kernel_ids=tuple(k["id"] for k in rows))


def failure_text(status: str, reason: str) -> str:
    """A failure as counted: its verdict and the first line of the runner's reason, numbers blanked so that
    "err 3.2" and "err 4.1" count as one reason."""
    line = (reason or "").strip().splitlines()[0] if (reason or "").strip() else ""
    line = re.sub(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?", "#", line)[:REASON_CHARS]
    return f"{status}: {line}" if line else status


def bank_table(*, user, device_model: str = "", model: str = "") -> dict:
    """The Ideas page: {"rows": [(technique, [(family, Stats or None)])], "families": [...], "calibration": [...],
    "costs": [(model, technique, Stats, dollars per point)], "devices": [...], "models": [...]}."""
    outcomes = idea_outcomes(searches=searches_visible_to(user))
    devices = sorted({o.key.device_model for o in outcomes})
    models = sorted({o.model for o in outcomes})
    chosen = [o for o in outcomes if (not device_model or o.key.device_model == device_model)
              and (not model or o.model == model)]
    cells = bank.summarise(chosen, by=lambda o: (o.key.technique, o.key.family))
    families = sorted({family for _, family in cells})
    techniques = sorted({technique for technique, _ in cells})
    rows = [(t, [(f, cells.get((t, f))) for f in families]) for t in techniques]
    by_cost = bank.summarise(chosen, by=lambda o: (o.model, o.key.technique))
    groups: dict = {}
    for o in chosen:
        groups.setdefault((o.model, o.key.technique), []).append(o)
    costs = [(m, t, by_cost[(m, t)], bank.dollars_per_point(groups[(m, t)])) for m, t in sorted(groups)]
    return {"rows": rows, "families": families, "calibration": bank.calibration(chosen), "costs": costs,
            "devices": devices, "models": models, "ideas": len(chosen)}


def bank_cell_kernels(*, user, technique: str, family: str, device_model: str = "", model: str = ""):
    """The kernels behind one cell of the Ideas page, fastest first."""
    outcomes = [o for o in idea_outcomes(searches=searches_visible_to(user), family=family)
                if o.key.technique == technique and (not device_model or o.key.device_model == device_model)
                and (not model or o.model == model)]
    ids = [k for o in outcomes for k in o.kernel_ids]
    return (Kernel.objects.filter(pk__in=ids).select_related("idea", "search", "problem")
            .order_by("status", "median_ms", "id"))

