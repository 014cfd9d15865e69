"""What each proposer can do, declared apart from its code: asking imports no implementation (and so
no SDK). Callers ask these, never a proposer's name; each class carries its own row (a test holds them)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """What a proposer can do (the model's Proposer choices name and label them)."""

    # A language model writes its ideas and kernels from the prompt: they are the model's (origin "llm"),
    # each call is an exchange worth showing, and the prompt carries the team's lessons.
    llm: bool = False
    api_key: str = ""  # the environment variable holding the key it calls with ("": none, it runs offline)
    model_setting: str = ""  # the Django setting naming its default model ("": it takes no model)
    efforts: tuple[str, ...] = ()  # the effort labels a search may ask of it (none: it takes no effort)
    thinking: bool = False  # a thinking budget per search
    agent_mode: bool = False  # kernel calls may compile, check and profile drafts before submitting
    repairs: bool = False  # repairs a failed kernel from the runner's verdict
    people_ideas: bool = False  # implements ideas people add to a search
    any_problem: bool = False  # writes kernels for any problem (else `Proposer.supports` says which)
    # Its ideas are a fixed list per op family, in order, none conditioned on its parent kernel; what it
    # cannot do once it never will, so a search it cannot continue ends instead of pausing.
    fixed: bool = False

    @property
    def offline(self) -> bool:
        return not self.api_key

    @property
    def takes_model(self) -> bool:
        return bool(self.model_setting)


CAPABILITIES = {
    "playbook": Capabilities(fixed=True),
    "anthropic": Capabilities(llm=True, api_key="ANTHROPIC_API_KEY", model_setting="ANTHROPIC_MODEL",
                              efforts=("low", "medium", "high", "xhigh", "max"),  # the API's output_config.effort
                              thinking=True, agent_mode=True, repairs=True, people_ideas=True, any_problem=True),
}
