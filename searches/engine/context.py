"""What the proposer is shown, read from the database: the problem with its target and
baselines, the bank, a kernel with its verdict and evidence, the ideas tried so far. The
choosing and wording happen in proposers/pack.py and proposers/prompts.py."""

import math
from dataclasses import replace

from django.conf import settings

from evaluation.models import EvaluationJob
from memory import bank as idea_bank
from memory import services as memory
from proposers import pack, playbook, prompts
from proposers.base import Failure, KernelContext, LessonShown, ProblemContext, Proposer, TriedIdea
from proposers.registry import get_proposer
from searches.models import Idea, Kernel, Search, Verdict
from searches.selectors.ideas import key_scope, search_priors
from searches.selectors.kernels import kernel_is_ranked, kernel_profile, kernel_runs, speed_of_light
from searches.selectors.lessons import lessons_for_search
from searches.selectors.targets import target_facts

from . import gate, tools

TRIED_IDEAS_SHOWN = 40
REASON_CHARS = 600  # of each earlier attempt's reason in a repair turn
NOTES_SHOWN, NOTE_CHARS = 4, 400  # the runner's notes on one kernel, as the model reads them
FAILED = (Verdict.INCORRECT, Verdict.REJECTED, Verdict.RUNTIME_ERROR, Verdict.TIMEOUT, Verdict.COMPILE_ERROR,
          Verdict.CRASHED, Verdict.OOM, Verdict.NO_CODE)


def new_proposer(search: Search) -> Proposer:
    """The search's proposer, its own (closing it abandons its calls in flight, no other search's)."""
    can, options = search.capabilities, {}
    if can.takes_model:
        options.update(model=search.model or getattr(settings, can.model_setting),
                       step_models={step: getattr(search, field) for step, field in Search.STEP_MODELS.items()})
    if can.efforts:
        options["effort"] = search.effort
    if can.thinking:
        options["thinking"] = search.thinking_tokens
    if can.api_key:  # the key's places in flight, shared by every process that calls with it
        options["gate"] = gate.for_environment()
    if can.agent_mode and search.agent_mode:  # kernel calls may compile, check and profile drafts, each a runner job
        options["tools"] = tools.RunnerTools(search)
    return get_proposer(search.proposer, **options)


def close_proposer(proposer: Proposer) -> None:
    close = getattr(proposer, "close", None)
    if close is not None:
        close()


def problem_context(search: Search) -> ProblemContext:
    problem = search.problem
    baseline = (problem.validation or {}).get("baseline") or {}
    return ProblemContext(
        name=problem.name, source=problem.source, device=search.device, family=problem.family or None,
        outputs=list((problem.validation or {}).get("outputs") or []), allow_library=search.allow_library,
        description=problem.description, language=search.language, target=target_facts(device=search.device),
        eager_ms=baseline.get("eager_ms"), compile_ms=baseline.get("compile_ms"), bank=bank(search),
        lessons=lessons_shown(search),
    )


def ideas_context(search: Search) -> ProblemContext:
    """The problem as an ideas call sees it: with the team's priors on similar problems (unless the search's
    prior weight is 0: the bank off) and, in the first ideas call of a search started from the team's
    memory, the playbook's recipes for its family."""
    problem = problem_context(search)
    key, priors, calibration = search_priors(search) if search.prior_weight else (None, [], None)
    first = search.seed_from_team and not Idea.objects.filter(search=search).exists()
    menu = playbook.menu(problem.family or "", search.device) if first else []
    return replace(problem, priors=priors, prior_scope=key_scope(key) if key else "", menu=menu,
                   prior_calibration=calibration)


def ideas_asked(search: Search, problem: ProblemContext) -> int:
    """How many ideas to ask for: with priors that may steer, more than are implemented, so the ranking can
    leave the least promising out before their kernels are paid for."""
    count = search.ideas_per_parent
    if not problem.priors or not search.prior_weight:
        return count
    return count + math.ceil(count * search.prior_weight / 100)


def ideas_kept(search: Search, proposals: list, problem: ProblemContext) -> list:
    """The reply's ideas in the order the priors and the model agree on (its predictions corrected by how they
    held on similar problems), as many as the search implements."""
    trust = problem.prior_calibration.ratio if problem.prior_calibration else None
    order = idea_bank.rank([p.technique for p in proposals], problem.priors, search.prior_weight / 100,
                           expected=[p.expected_speedup for p in proposals], trust=trust)
    return [proposals[i] for i in order][: search.ideas_per_parent]


def lessons_shown(search: Search) -> list[LessonShown]:
    """The approved lessons of similar problems this call's prompt carries, each counted as shown once
    more (a context is built for one call about to be sent). A proposer that is no model reads no prompt: none."""
    if not search.capabilities.llm:
        return []
    lessons = lessons_for_search(search)
    memory.lessons_mark_shown(lesson_ids=[lesson.id for lesson in lessons])
    return [LessonShown(text=lesson.shown_text, verdict=lesson.verdict, reason_code=lesson.reason_code,
                        technique=lesson.technique) for lesson in lessons]


def bank(search: Search) -> list[KernelContext]:
    """The search's fastest correct kernels of the rounds before this one: fixed for a round, so
    the calls of a round share the cached prompt prefix."""
    kernels = (Kernel.objects.filter(search=search, round__lt=max(search.current_round, 1), duplicate_of__isnull=True)
               .ranked()
               .select_related("idea", "parent").order_by("median_ms", "id")[:pack.BANK_KERNELS])
    return [kernel_context(k) for k in kernels]


def kernel_context(kernel: Kernel) -> KernelContext:
    sol = speed_of_light(kernel.problem, kernel)
    run = latest_run(kernel)
    result = (run.result or {}) if run else {}
    parent = kernel.parent
    return KernelContext(
        id=kernel.id, source=kernel.source, status=kernel.status, median_ms=kernel.median_ms,
        speedup_vs_eager=kernel.speedup_vs_eager, speedup_vs_compile=kernel.speedup_vs_compile,
        reason=kernel.reason, idea_title=kernel.idea.title if kernel.idea_id else "",
        speed_of_light=prompts.speed_of_light_text(sol) if sol else "",
        errors=list(((run.correctness if run else None) or {}).get("per_distribution") or []),
        log=(run.compile_log if run and run.compile_log else "") or str(result.get("log") or ""),
        speedup_vs_parent=(parent.median_ms / kernel.median_ms
                           if parent and parent.median_ms and kernel.median_ms and kernel.status == Verdict.CORRECT
                           else None),
        paired_eager_ms=paired_eager_ms(result),
        notes=runner_notes(result),
        profile=profile_shown(kernel),
    )


def profile_shown(kernel: Kernel) -> str:
    """The newest profile of one of its round's `profiled_kernels` fastest ranked kernels, as its page
    shows it (a counter profile arrives with a rerun); "" for the others (a profile the next ideas call
    reads is evidence; on every kernel it would be noise)."""
    if not is_profiled(kernel):
        return ""
    _, profile = kernel_profile(kernel_runs(kernel=kernel))
    return prompts.profile_text(profile) if profile else ""


def is_profiled(kernel: Kernel) -> bool:
    """One of its round's `profiled_kernels` fastest ranked kernels."""
    if kernel.search is None or not kernel_is_ranked(kernel):
        return False
    top = (Kernel.objects.filter(search=kernel.search, round=kernel.round, duplicate_of__isnull=True).ranked()
           .order_by("median_ms", "id").values_list("id", flat=True)[:kernel.search.profiled_kernels])
    return kernel.id in set(top)


def runner_notes(result: dict) -> tuple[str, ...]:
    """What the runner said beside its verdict: the static advisories the run decided, and a fallback
    to PyTorch that ran (runner/common/findings.py)."""
    notes = [str(a.get("reason") or "") for a in result.get("advisories") or [] if isinstance(a, dict)]
    if result.get("fallback"):
        notes.append(f"it {result['fallback']}")
    return tuple(n[:NOTE_CHARS] for n in notes if n)[:NOTES_SHOWN]


def paired_eager_ms(result: dict) -> float | None:
    """On the CPU a speedup over eager is measured against eager blocks timed between the kernel's
    (runner/host/pairing.py): that eager time, so the ratio the model reads agrees with the times beside it."""
    paired = result.get("paired") or {}
    return paired.get("eager_ms") if not paired.get("dropped") else None


def latest_run(kernel: Kernel):
    return kernel.runs.exclude(purpose=EvaluationJob.Purpose.RERUN).order_by("-id").first()


def failure_of(search: Search, broken: Kernel, turn: int, root: Kernel) -> Failure:
    """A repair turn's evidence: the runner's verdict and reason verbatim, its log, and how each
    earlier attempt of the chain was judged (turn n sees turns 1..n-1)."""
    earlier, kernel = [], broken.repair_of
    while kernel is not None:
        earlier.append(f"#{kernel.id}: {kernel.status}: {(kernel.reason or '(no reason given)')[:REASON_CHARS]}")
        kernel = kernel.repair_of
    return Failure(verdict=broken.status, reason=broken.reason, log=kernel_context(broken).log, turn=turn,
                   turns=search.repair_attempts, of_id=root.id, earlier=tuple(reversed(earlier)))


def tried_ideas(search: Search) -> list[TriedIdea]:
    tried = []
    for idea in Idea.objects.filter(search=search).order_by("-id")[:TRIED_IDEAS_SHOWN]:
        kernels = list(idea.kernels.select_related("parent"))
        reasons = list(dict.fromkeys(k.reason for k in kernels if k.status in FAILED and k.reason))
        tried.append(TriedIdea(title=idea.title, description=idea.description, outcome=idea_outcome(idea, kernels),
                               reasons=reasons, briefs=brief_verdicts(idea, kernels), technique=idea.technique))
    return list(reversed(tried))


def brief_verdicts(idea: Idea, kernels: list) -> tuple[tuple[str, str], ...]:
    """(brief, how its kernel fared) for each implementation of the idea, its repairs followed to the last."""
    briefs = idea.briefs if isinstance(idea.briefs, list) else []
    verdicts = []
    for variant, brief in enumerate(briefs):
        kernel = next((k for k in kernels if k.variant == variant), None)
        fates = []
        while kernel is not None:
            fates.append(kernel_fate(kernel))
            kernel = next((k for k in kernels if k.repair_of_id == kernel.id), None)
        verdicts.append((str(brief), ", repaired: ".join(fates) or "not implemented yet"))
    return tuple(verdicts)


def kernel_fate(kernel: Kernel) -> str:
    """A kernel's verdict as the ideas history reads it: a quarantined speed is never advertised."""
    if kernel.status != Verdict.CORRECT:
        return kernel.status
    if not kernel_is_ranked(kernel):
        return "correct, under review (no speed given)"
    fate = f"correct, {kernel.median_ms:.4g} ms"
    if kernel.speedup_vs_eager:
        fate += f" ({kernel.speedup_vs_eager:.2f}x vs eager{eager_beside(kernel)})"
    return fate + expected_beside(kernel)


def expected_beside(kernel: Kernel) -> str:
    """The speedup over its parent the model expected (its analysis) beside the one measured: calibration."""
    expected, parent = (kernel.analysis or {}).get("expected_speedup"), kernel.parent
    if not expected or parent is None or not parent.median_ms:
        return ""
    return f"; expected {expected:.2f}x vs its parent, got {parent.median_ms / kernel.median_ms:.2f}x"


def eager_beside(kernel: Kernel) -> str:
    """On the CPU, the eager time the kernel's speedup was measured against (timed between its blocks)."""
    run = latest_run(kernel)
    eager = paired_eager_ms((run.result or {}) if run else {})
    return f" {eager:.4g} ms, timed beside it" if eager else ""


def idea_outcome(idea: Idea, kernels: list | None = None) -> str:
    kernels = list(idea.kernels.all()) if kernels is None else kernels
    if not kernels:
        return "not implemented yet"
    finished = [k for k in kernels if k.status not in (Verdict.PENDING, Verdict.EVALUATING)]
    correct = [k for k in finished if k.status == Verdict.CORRECT]
    repairs = [k for k in finished if k.origin == Kernel.Origin.REPAIR]
    fixed = f"; repairs: {sum(k.status == Verdict.CORRECT for k in repairs)} of {len(repairs)} fixed" if repairs else ""
    if not finished:
        return f"{len(kernels)} implementation(s) still being evaluated"
    if correct:
        # A quarantined speed is not advertised: it may be noise or a trick a person has yet to review.
        ranked = [k for k in correct if kernel_is_ranked(k)]
        best = min((k for k in ranked if k.median_ms), key=lambda k: k.median_ms, default=None)
        speed = "" if ranked else ", under review (held out of the rankings, so no speed is given)"
        if best and best.speedup_vs_eager:
            speed = f", best {best.median_ms:.4g} ms ({best.speedup_vs_eager:.2f}x vs eager{eager_beside(best)}"
            speed += f", {best.speedup_vs_compile:.2f}x vs torch.compile)" if best.speedup_vs_compile else ")"
            parent = idea.parent_kernel
            if parent is not None and parent.median_ms:
                speed += f", {parent.median_ms / best.median_ms:.2f}x vs its parent"
        return f"{len(correct)}/{len(finished)} correct{speed}{fixed}"
    verdicts = sorted({k.status for k in finished})
    return f"all {len(finished)} failed: {', '.join(verdicts)}{fixed}"
