"""Every proposer declares what it can do (proposers/capabilities.py), and callers ask that instead of
its name: the registry's rows, the classes carrying the same, and the declarations holding in what the
classes do."""

import pytest

from proposers import registry
from proposers.base import Failure, KernelContext, ProblemContext, ProposerError
from proposers.capabilities import CAPABILITIES, Capabilities
from searches.models import Search


def test_every_proposer_of_a_search_declares_its_capabilities():
    assert list(CAPABILITIES) == Search.Proposer.values
    for name in Search.Proposer.values:
        assert isinstance(registry.capabilities(name), Capabilities)
        assert registry.proposer_class(name).capabilities is CAPABILITIES[name]  # the class carries its row
    with pytest.raises(ValueError, match="unknown proposer 'nobody'"):
        registry.capabilities("nobody")


def test_what_each_proposer_declares():
    playbook, anthropic = registry.capabilities("playbook"), registry.capabilities("anthropic")
    assert playbook.offline and playbook.fixed and not playbook.llm and not playbook.takes_model
    assert not (playbook.repairs or playbook.people_ideas or playbook.any_problem or playbook.agent_mode
                or playbook.efforts or playbook.thinking)
    assert anthropic.llm and anthropic.api_key == "ANTHROPIC_API_KEY" and not anthropic.offline
    assert anthropic.model_setting == "ANTHROPIC_MODEL" and anthropic.takes_model
    assert anthropic.repairs and anthropic.people_ideas and anthropic.any_problem and not anthropic.fixed
    assert anthropic.agent_mode and anthropic.efforts == ("low", "medium", "high", "xhigh", "max") and anthropic.thinking
    assert registry.names(takes_model=True) == ["anthropic"] and registry.names(offline=True) == ["playbook"]


def test_which_problems_a_proposer_serves_follows_any_problem():
    playbook, anthropic = registry.proposer_class("playbook"), registry.proposer_class("anthropic")
    assert playbook.supports("softmax", "cpu") and not playbook.supports("conv3d", "cuda")
    assert not playbook.supports("", "cpu")
    assert anthropic.supports("conv3d", "cuda") and anthropic.supports("", "cpu")


def test_a_proposer_that_declares_no_repairs_refuses_one():
    proposer = registry.get_proposer("playbook")
    problem = ProblemContext(name="softmax", source="", device="cpu", family="softmax")
    with pytest.raises(ProposerError, match="cannot be repaired"):
        proposer.repair(problem, KernelContext(id=1, source="x", status="compile_error"),
                        Failure(verdict="compile_error", reason="error"))
