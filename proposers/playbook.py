"""The built-in, offline proposer: ideas and kernels written by us for the catalog's op families.

Deterministic and free (every exchange records zero tokens). The ideas for a family and target
come in order of expected value; `ideas()` skips those already tried in the search and returns
fewer (possibly none) once the playbook is exhausted. Kernel text comes from
the playbook package, which reads the problem's source but never runs it.
"""

import playbook as book
from memory.keys import technique_in

from . import pack
from .base import Exchange, IdeaProposal, KernelProposal, Proposer, ProposerError
from .capabilities import CAPABILITIES

FAMILY_NAMES = ("softmax", "layernorm", "matmul", "conv2d", "conv_relu_maxpool", "elementwise", "reduction")


def menu(family: str, device: str) -> list[tuple[str, str, str]]:
    """(title, technique, description) of the playbook's ideas for a family and target, offered to a model."""
    if not supports(family, device):
        return []
    return [(r.title, technique_in(r.slug), r.description) for r in book.recipes(family, device)[1:]]


def supports(family: str, device: str) -> bool:
    """Whether the playbook writes kernels for this op family on this device."""
    return family in FAMILY_NAMES and device in book.TARGETS and bool(book.recipes(family, device))


class PlaybookProposer(Proposer):
    name = "playbook"
    capabilities = CAPABILITIES[name]

    @classmethod
    def supports(cls, family: str, device: str) -> bool:
        return supports(family, device)

    def __init__(self, **options):
        self.options = options  # accepted for a uniform get_proposer(); the playbook has no settings

    def starting_kernel(self, problem):
        recipe = self._recipes(problem)[0]
        return self._kernel(problem, recipe, 0, "starting kernel")

    def ideas(self, problem, parent, tried, count, briefs=1):
        recipes = self._recipes(problem)
        done = {pack.idea_key(idea.title) for idea in tried}
        fresh = [recipe for recipe in recipes[1:] if pack.idea_key(recipe.title) not in done][:max(count, 0)]
        proposals = [IdeaProposal(recipe.title, recipe.description, technique=technique_in(recipe.slug))
                     for recipe in fresh]
        left = len([r for r in recipes[1:] if pack.idea_key(r.title) not in done]) - len(fresh)
        note = "" if left else " The playbook has no further ideas for this family and target."
        reply = "\n".join(f"- {idea.title}" for idea in proposals) or "(no untried ideas left)"
        exchange = _exchange(f"playbook: {count} ideas for {problem.family}/{problem.device} "
                             f"({len(done)} tried).{note}", reply)
        return proposals, exchange

    def kernel(self, problem, parent, idea, variant, brief=""):
        for recipe in self._recipes(problem):
            if pack.idea_key(recipe.title) == pack.idea_key(idea.title):
                return self._kernel(problem, recipe, variant, f"idea {recipe.slug!r}")
        raise ProposerError(
            f"The built-in playbook implements only its own ideas; {idea.title!r} is not one of them. "
            "Choose the Anthropic proposer to implement ideas written by people.",
            _exchange(f"playbook: kernel for idea {idea.title!r}", "(not a playbook idea)"))

    def repair(self, problem, broken, failure):
        raise ProposerError("The built-in playbook's kernels are fixed text and cannot be repaired from a "
                            "compiler message; the Anthropic proposer can.",
                            _exchange("playbook: repair", "(the playbook does not repair kernels)"))

    def _recipes(self, problem):
        family, target = problem.family, problem.device
        if family not in FAMILY_NAMES:
            raise ProposerError(
                f"The built-in playbook knows {', '.join(FAMILY_NAMES)}; this problem's family is "
                f"{family or 'unknown'}: choose the Anthropic proposer.")
        if target not in book.TARGETS:
            raise ProposerError(f"The built-in playbook targets cpu and cuda, not {target!r}.")
        return book.recipes(family, target)

    def _kernel(self, problem, recipe, variant, what):
        count = len(recipe.variants)
        label = f"playbook: {problem.family}/{problem.device}/{recipe.slug} variant {variant}"
        if variant >= count:  # an empty proposal is recorded as "no code" rather than a duplicate evaluation
            note = f"The playbook has {count} variant(s) of {recipe.title!r}; variant {variant + 1} was not written."
            return KernelProposal(source="", name=f"{recipe.slug}-v{variant}", note=note), _exchange(label, note)
        try:
            source = book.render(problem.source, problem.family, problem.device, recipe, variant)
        except book.ReadError as error:
            raise ProposerError(f"The built-in playbook could not read this {problem.family} problem: {error}. "
                                "Choose the Anthropic proposer.", _exchange(label, str(error))) from error
        reply = f"{recipe.title}.\n\n{recipe.description}\n\nParameters: {recipe.variants[variant] or 'none'}."
        proposal = KernelProposal(source=source, name=f"{recipe.slug}-v{variant}", note=recipe.title)
        return proposal, _exchange(f"{label} ({what})", reply)


def _exchange(prompt: str, reply: str) -> Exchange:
    return Exchange(prompt=prompt, reply=reply, model="playbook")
