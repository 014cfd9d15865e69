"""Every setting a search starts with, once: its name (the `Search` field), default, limits, label and
help. The model's defaults, the search form's fields and checks, `manage.py search`'s options,
`bench_seeds`, the services' checks and what a fork may change all read it from here.

A new setting is one `Setting` below, the `Search` field with `default=SEARCH_CONFIG.<name>.default`,
and its migration. Plain Python: no Django.
"""

import argparse
import math
from dataclasses import dataclass, fields

from proposers.capabilities import CAPABILITIES
from proposers.prompts import LANGUAGES

EFFORTS = tuple(dict.fromkeys(effort for can in CAPABILITIES.values() for effort in can.efforts))
# The baselines a search or a run may ask the runner to time beside eager and torch.compile's default, as
# the runner names them (runner/common/baselinekinds.py); CUDA-only ones are skipped on the CPU, with the reason.
MORE_BASELINES = (("reduce-overhead", "torch.compile reduce-overhead"), ("max-autotune", "torch.compile max-autotune"),
                  ("cudagraph", "CUDA graphs of the eager model"))


@dataclass(frozen=True)
class Setting:
    """One search setting. Numbers lie in [low, high] (a bound of None: none); a `least` above 0 means
    0 or at least that; `choices` are (value, label) pairs (empty: the model field's, or free text up to
    `max_length`). A default of None means "no limit" and the value may be left empty."""

    name: str
    default: object
    label: str
    help: str = ""
    kind: type | None = None  # int, float, bool, str or list (of `choices`); None: the default's type
    low: float | None = None
    high: float | None = None
    least: int | None = None
    unit: str = ""  # what the number counts, where a refusal says it (e.g. "tokens")
    choices: tuple = ()
    max_length: int | None = None
    required: bool = False  # the form asks for it (else an empty field means the default)
    aliases: tuple[str, ...] = ()  # the command's older short options, beside --name-with-dashes

    @property
    def type(self) -> type:
        return self.kind or type(self.default)

    @property
    def words(self) -> str:
        return self.name.replace("_", " ")

    @property
    def flags(self) -> tuple[str, ...]:
        return ("--" + self.name.replace("_", "-"), *self.aliases)

    @property
    def limits(self) -> str:
        """What a valid value is, as every refusal says it ("" for a setting any value fits)."""
        if self.type is list:
            return f"{self.words.capitalize()} are among {', '.join(value for value, _ in self.choices)}."
        if self.choices:
            values = [value for value, _ in self.choices if value]
            blank = next((label for value, label in self.choices if not value), "")
            return f"choose one of {', '.join(values)}" + (f", or leave it empty for {blank[0].lower()}{blank[1:]}"
                                                           if blank else "")
        if self.type not in (int, float):
            return ""
        number = "a whole number" if self.type is int else "a number"
        if self.high is None:
            return f"{self.words} must be {number} of at least {self.low:g}, or empty for no limit"
        return f"{self.words} must be {number} from {self.low:g} to {self.high:g}"

    @property
    def least_limit(self) -> str:
        return f"{self.words} is 0 (off) or at least {self.least} {self.unit}".rstrip() if self.least else ""

    def refusal(self, value) -> str:
        """Why `value` is not a valid value of this setting, or "" when it is."""
        if self.type is list:
            known = {v for v, _ in self.choices}
            return "" if isinstance(value, (list, tuple)) and set(value) <= known else self.limits
        if self.choices:
            if value in (None, "") and any(not v for v, _ in self.choices):
                return ""
            return "" if value in {v for v, _ in self.choices} else f"Unknown {self.words} {value!r}: {self.limits}."
        if self.type not in (int, float):
            return ""
        if value is None and self.default is None:
            return ""
        number = (int,) if self.type is int else (int, float)
        if not isinstance(value, number) or isinstance(value, bool) or not math.isfinite(value) or not (
                (self.low is None or value >= self.low) and (self.high is None or value <= self.high)):
            return f"{self.limits} (got {value!r})."
        if self.least and 0 < value < self.least:
            return f"{self.least_limit} (got {value!r})."
        return ""

    def parse(self, text: str):
        """An option's text as this setting's value: argparse's `type` (a refusal is its error)."""
        if self.type is list:  # comma-separated, e.g. cudagraph,max-autotune
            text = [item.strip() for item in text.split(",") if item.strip()]
        try:
            value = self.type(text) if self.type in (int, float) else text
        except ValueError:
            raise argparse.ArgumentTypeError(f"{self.limits} (got {text!r}).") from None
        refusal = self.refusal(value)
        if refusal:
            raise argparse.ArgumentTypeError(refusal)
        return value


def _language_choices() -> tuple:
    return (("", "The device's default (CUDA through NVRTC; C on the CPU)"),
            *((key, label) for key, (label, _, _) in LANGUAGES.items()))


@dataclass(frozen=True)
class SearchConfig:
    """The settings, in the order the form and the command list them."""

    name: Setting = Setting("name", "", "Name", "Optional: a name to find it by.", max_length=200)
    proposer: Setting = Setting("proposer", "playbook", "Proposer", required=True,
                                help="Where ideas and kernels come from: an LLM, or the built-in hand-written kernels.")
    model: Setting = Setting("model", "", "Model", max_length=100,
                             help="LLM model name for the Anthropic proposer; empty: the configured default.")
    ideas_model: Setting = Setting("ideas_model", "", "Ideas model", max_length=100,
                                   help="A model for the ideas calls; empty: the model above.")
    kernel_model: Setting = Setting("kernel_model", "", "Kernels model", max_length=100,
                                    help="A model for the kernel calls; empty: the model above.")
    repair_model: Setting = Setting("repair_model", "", "Repairs model", max_length=100,
                                    help="A model for the repair calls; empty: the model above.")
    effort: Setting = Setting("effort", "", "Effort (Anthropic)", choices=(("", "The model's default"),
                                                                         *((e, e) for e in EFFORTS)),
                              help="How hard the model works on each reply (output_config.effort).")
    thinking_tokens: Setting = Setting("thinking_tokens", 0, "Thinking budget (tokens, Anthropic)", low=0, high=64000,
                                       least=1024, unit="tokens", aliases=("--thinking",),
                                       help="The model reasons before each reply; 0: off, else at least 1024.")
    agent_mode: Setting = Setting("agent_mode", False, "Agent mode (Anthropic)",
                                  help="Kernel calls may compile, check and profile drafts in the sandbox before "
                                       "submitting; each run counts as a candidate.")
    agent_tool_calls: Setting = Setting("agent_tool_calls", 4, "Tool calls per kernel (agent mode)", low=1, high=20,
                                        help="Compile, check and profile runs one kernel call may make.")
    device: Setting = Setting("device", "cpu", "Device", required=True,
                              help="The device its kernels are written and timed for.")
    language: Setting = Setting("language", "", "Kernel language", choices=_language_choices(),
                                help="Stated in every prompt; it must fit the device.")
    rounds: Setting = Setting("rounds", 5, "Rounds (R)", low=1, high=50, required=True,
                              help="Rounds after the starting kernel.")
    parents_per_round: Setting = Setting("parents_per_round", 2, "Parents per round (B)", low=1, high=20,
                                         required=True, aliases=("--parents",),
                                         help="The fastest correct kernels that get ideas each round.")
    ideas_per_parent: Setting = Setting("ideas_per_parent", 3, "Ideas per parent (I)", low=1, high=20, required=True,
                                        aliases=("--ideas",), help="Ideas asked for each parent.")
    kernels_per_idea: Setting = Setting("kernels_per_idea", 2, "Kernels per idea (K)", low=1, high=20, required=True,
                                        aliases=("--kernels",), help="Implementations of each idea, one brief each.")
    bank_size: Setting = Setting("bank_size", 2, "Bank of earlier good kernels", low=0, high=50, required=True,
                                 aliases=("--bank",), help="Extra parents: good earlier kernels never built on.")
    repair_attempts: Setting = Setting("repair_attempts", 1, "Repair turns per failed kernel", low=0, high=5,
                                       aliases=("--repairs",),
                                       help="Each gets the runner's verdict, reason and log (LLM only).")
    profiled_kernels: Setting = Setting("profiled_kernels", 2, "Profiled kernels per round", low=0, high=20,
                                        help="The fastest correct kernels whose profile the next ideas see.")
    stale_rounds: Setting = Setting("stale_rounds", 0, "Stop after rounds without gain", low=0, high=50,
                                    help="Stop after this many rounds in a row without a faster kernel; 0: run every "
                                         "round.")
    sol_stop_percent: Setting = Setting("sol_stop_percent", 0, "Stop a branch at % of speed of light", low=0, high=100,
                                        help="e.g. 90: a kernel at 90% of its floor gets no more ideas; 0: never.")
    allow_library: Setting = Setting("allow_library", False, "Allow library calls (cuBLAS, torch ops) in kernels")
    prior_weight: Setting = Setting("prior_weight", 50, "How much the team's priors may steer (%)", low=0, high=100,
                                    help="Ideas calls see what worked on similar problems and ideas are ranked by it; "
                                         "0: the bank off.")
    seed_from_team: Setting = Setting("seed_from_team", False, "Start from the team's memory",
                                      help="The best trusted kernels of similar problems are judged here first, and "
                                           "the first ideas call is offered the playbook's recipes.")
    stop_points_per_dollar: Setting = Setting(
        "stop_points_per_dollar", 0.0, "Stop under this gain per dollar (points)", low=0, high=1e6,
        help="Ends the search once its last 2 rounds bought fewer percent points of speedup per dollar; 0: never.")
    baselines: Setting = Setting("baselines", [], "More baselines", kind=list, choices=MORE_BASELINES,
                                 help="Timed by the runner beside eager and torch.compile's default for every "
                                      "candidate; CUDA-only ones are skipped on the CPU, with the reason.")
    private: Setting = Setting("private", False, "Keep its lessons to me",
                               help="Its lessons, idea outcomes and kernels reach only your own searches and pages: "
                                    "not the team's priors, seeds, Ideas or Lessons pages.")
    max_candidates: Setting = Setting("max_candidates", None, "Budget: candidates", kind=int, low=1)
    max_tokens: Setting = Setting("max_tokens", None, "Budget: tokens", kind=int, low=1, help="LLM tokens, in and out.")
    max_cost_usd: Setting = Setting("max_cost_usd", None, "Budget: cost (USD)", kind=float, low=0.01,
                                    aliases=("--max-cost",), help="LLM cost in USD.")

    def __post_init__(self):
        for f in fields(self):
            if getattr(self, f.name).name != f.name:
                raise ValueError(f"the setting {f.name!r} is named {getattr(self, f.name).name!r}")

    def __iter__(self):
        return (getattr(self, f.name) for f in fields(self))

    def __getitem__(self, name: str) -> Setting:
        if name not in self.names:
            raise KeyError(name)
        return getattr(self, name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))

    def defaults(self) -> dict:
        return {setting.name: setting.default for setting in self}

    def complete(self, values: dict) -> dict:
        """`values` with the default of every setting it leaves out; TypeError on a name that is no setting."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise TypeError(f"not search settings: {', '.join(sorted(unknown))}")
        return {**self.defaults(), **values}

    def refusals(self, values: dict) -> list[tuple[str, str]]:
        """(name, why) for each of `values` outside its setting's limits."""
        return [(name, why) for name, value in values.items() if (why := self[name].refusal(value))]

    def add_arguments(self, parser, names=None, *, defaults: dict | None = None, choices: dict | None = None,
                      helps: dict | None = None) -> None:
        """One option per setting (`names`, else all) on an argparse parser, its value stored under the
        setting's name and checked by the setting: a bad value is refused with the setting's limits.
        `defaults` overrides a default for this command (say why there), `choices` gives the values of
        a setting whose choices live on the model field, `helps` says more than the setting's help."""
        defaults, choices, helps = defaults or {}, choices or {}, helps or {}
        for setting in (self[name] for name in (names or self.names)):
            default = defaults.get(setting.name, setting.default)
            text = helps.get(setting.name) or setting.help or setting.label
            if setting.type is bool:
                parser.add_argument(*setting.flags, dest=setting.name, default=default,
                                    action="store_true" if not default else argparse.BooleanOptionalAction,
                                    help=text.replace("%", "%%"))
                continue
            if setting.choices:
                text += f" ({', '.join(value for value, _ in setting.choices if value)}"
                text += ", comma-separated)" if setting.type is list else ")"
            if setting.name not in helps:  # an overridden help says its own default
                text += f" (default {'no limit' if default is None else default if default not in ('', []) else 'none'})"
            options = ({"choices": choices[setting.name]} if setting.name in choices
                       else {"type": setting.parse, "metavar": setting.name.upper()})
            parser.add_argument(*setting.flags, dest=setting.name, default=default, help=text.replace("%", "%%"),
                                **options)

    def from_options(self, options: dict, names=None) -> dict:
        """The settings' values among a command's parsed options."""
        return {name: options[name] for name in (names or self.names)}


SEARCH_CONFIG = SearchConfig()
