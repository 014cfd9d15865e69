"""What the proposer is shown: the problem, a kernel and how it fared, the ideas tried so far."""

from django.conf import settings

from proposers import prompts
from proposers.base import KernelContext, ProblemContext, Proposer, TriedIdea
from proposers.registry import get_proposer
from searches.models import Idea, Kernel, Search, Verdict
from searches.selectors.kernels import speed_of_light

TRIED_IDEAS_SHOWN = 40


_proposers: dict = {}


def proposer_for(search: Search) -> Proposer:
    key = (search.proposer, search.model, search.effort)
    if key not in _proposers:
        options = {}
        if search.proposer == Search.Proposer.ANTHROPIC:
            options = {"model": search.model or settings.ANTHROPIC_MODEL, "effort": search.effort}
        _proposers[key] = get_proposer(search.proposer, **options)
    return _proposers[key]


def problem_context(search: Search) -> ProblemContext:
    problem = search.problem
    return ProblemContext(
        name=problem.name, source=problem.source, device=search.device, family=problem.family or None,
        outputs=list((problem.validation or {}).get("outputs") or []), allow_library=search.allow_library,
        description=problem.description,
    )


def kernel_context(kernel: Kernel) -> KernelContext:
    sol = speed_of_light(kernel.problem, kernel)
    return KernelContext(
        id=kernel.id, source=kernel.source, status=kernel.status, median_ms=kernel.median_ms,
        speedup_vs_eager=kernel.speedup_vs_eager, speedup_vs_compile=kernel.speedup_vs_compile,
        reason=kernel.reason, idea_title=kernel.idea.title if kernel.idea_id else "",
        speed_of_light=prompts.speed_of_light_text(sol) if sol else "",
    )


def tried_ideas(search: Search) -> list[TriedIdea]:
    tried = []
    for idea in Idea.objects.filter(search=search).order_by("-id")[:TRIED_IDEAS_SHOWN]:
        tried.append(TriedIdea(title=idea.title, description=idea.description, outcome=idea_outcome(idea)))
    return list(reversed(tried))


def idea_outcome(idea: Idea) -> str:
    kernels = list(idea.kernels.all())
    if not kernels:
        return "not implemented yet"
    finished = [k for k in kernels if k.status not in (Verdict.PENDING, Verdict.EVALUATING)]
    correct = [k for k in finished if k.status == Verdict.CORRECT]
    if not finished:
        return f"{len(kernels)} implementation(s) still being evaluated"
    if correct:
        best = min((k for k in correct if k.median_ms), key=lambda k: k.median_ms, default=None)
        speed = ""
        if best and best.speedup_vs_eager:
            speed = f", best {best.median_ms:.4g} ms ({best.speedup_vs_eager:.2f}x vs eager"
            speed += f", {best.speedup_vs_compile:.2f}x vs torch.compile)" if best.speedup_vs_compile else ")"
        return f"{len(correct)}/{len(finished)} correct{speed}"
    verdicts = sorted({k.status for k in finished})
    return f"all {len(finished)} failed: {', '.join(verdicts)}"
