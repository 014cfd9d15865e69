from .base import Proposer, ProposerError, get_proposer  # noqa: F401
