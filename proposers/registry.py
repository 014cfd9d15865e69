"""The proposers by name (Search.proposer's values). Each is imported when first asked for, so
a process that never calls the API never imports its SDK."""

from .base import Proposer


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
