"""The proposers by name (Search.proposer's values) and what each can do (proposers/capabilities.py).
Each is imported when first asked for, so a process that never calls the API never imports its SDK."""

from .base import Proposer
from .capabilities import CAPABILITIES, Capabilities


def capabilities(name: str) -> Capabilities:
    """What the proposer `name` can do; ValueError for a name no proposer has."""
    if name not in CAPABILITIES:
        raise ValueError(f"unknown proposer {name!r}")
    return CAPABILITIES[name]


def names(**wanted) -> list[str]:
    """The proposers with every capability asked for, e.g. names(llm=True)."""
    return [name for name, caps in CAPABILITIES.items()
            if all(getattr(caps, key) == value for key, value in wanted.items())]


def proposer_class(name: str) -> type[Proposer]:
    if name == "playbook":
        from .playbook import PlaybookProposer

        return PlaybookProposer
    if name == "anthropic":
        from .anthropic import AnthropicProposer

        return AnthropicProposer
    raise ValueError(f"unknown proposer {name!r}")


def get_proposer(name: str, **options) -> Proposer:
    return proposer_class(name)(**options)
