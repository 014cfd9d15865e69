"""The interface every proposer implements: ideas for a parent kernel, then kernels for an idea.

Proposers never run code. They get plain data (problem source and metadata, earlier kernels
and their results) and return text. Replies are untrusted: the runner judges every kernel.
"""

from contextvars import ContextVar
from dataclasses import dataclass, field

from .capabilities import Capabilities

# Set by whoever sends a call (the engine, per call): called once the API has begun its reply. The
# prompt has been read then, and its cache written, so calls that share the prefix may go.
REPLY_BEGUN: ContextVar = ContextVar("reply_begun", default=None)


def reply_begun() -> None:
    hook = REPLY_BEGUN.get()
    if hook is not None:
        hook()


ABANDONED = "the call was abandoned: its search stopped"  # wherever a stopped search's call was waiting


class ProposerError(Exception):
    """A proposer could not produce anything usable (the reply is kept on the exception)."""

    def __init__(self, message: str, exchange: "Exchange | None" = None):
        super().__init__(message)
        self.exchange = exchange


class Gate:
    """Admission of one API key's calls, shared by every caller of the key (the engine's is in the
    database: searches/engine/gate.py). This one admits everything: a proposer used on its own."""

    def slot(self, stopped=lambda: False):
        """A context manager holding one of the key's in-flight places for a call. While it waits for one,
        `stopped()` true (the caller was abandoned) ends the wait with a ProposerError."""
        from contextlib import nullcontext

        return nullcontext()

    def wait(self, stopped=lambda: False) -> None:
        """Return once the key is not paused; while it waits, `stopped()` true ends it with a ProposerError."""

    def pause(self, seconds: float) -> None:
        """The API said to wait (429, 529 with retry-after): every caller of the key waits (here the one)."""
        import time

        time.sleep(seconds)


@dataclass
class ToolRun:
    """A tool's answer to the model: `text` goes back as the tool_result."""

    text: str
    is_error: bool = False


class Toolbox:
    """Agent mode: what a kernel call may run on a draft before it submits (compile, check, profile),
    at most `cap` runs per kernel; the engine's runs each in the evaluator's sandbox
    (searches/engine/tools.py). This one runs nothing."""

    cap = 0

    def run(self, tool: str, arguments: dict) -> ToolRun:
        return ToolRun(f"the tool {tool!r} is not available", is_error=True)


@dataclass
class Exchange:
    """What one proposer call cost and said: stored as a ProposerCall."""

    prompt: str = ""
    reply: str = ""
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0  # of cache_write_tokens, those written to the 1-hour cache (priced 2x input)
    duration_s: float = 0.0
    no_tool_replies: int = 0  # replies that called no tool where the model could choose (tool_choice auto)
    tool_calls: int = 0  # agent mode: compile, check and profile runs made for this call


def merge_exchanges(first: Exchange, second: Exchange, between: str = "\n\n----- retry -----\n\n") -> Exchange:
    """Two requests of one call as one: the second's prompt, both replies, their tokens and counts summed."""
    return Exchange(
        prompt=second.prompt, reply=first.reply + between + second.reply, model=second.model,
        input_tokens=first.input_tokens + second.input_tokens, output_tokens=first.output_tokens + second.output_tokens,
        cache_read_tokens=first.cache_read_tokens + second.cache_read_tokens,
        cache_write_tokens=first.cache_write_tokens + second.cache_write_tokens,
        cache_write_1h_tokens=first.cache_write_1h_tokens + second.cache_write_1h_tokens,
        duration_s=first.duration_s + second.duration_s, no_tool_replies=first.no_tool_replies + second.no_tool_replies,
        tool_calls=first.tool_calls + second.tool_calls,
    )


@dataclass
class ProblemContext:
    name: str
    source: str
    device: str  # "cpu" or "cuda"
    family: str | None = None  # from `runner validate`, e.g. "softmax"
    outputs: list = field(default_factory=list)  # [{shape, dtype}]
    allow_library: bool = False
    description: str = ""
    language: str = ""  # SEARCH_LANGUAGES key; "" for the device's default path
    target: dict = field(default_factory=dict)  # Worker.device_facts of the device served (keys may be missing)
    eager_ms: float | None = None
    compile_ms: float | None = None
    bank: list = field(default_factory=list)  # KernelContext: the search's best kernels so far
    # The team's record on similar problems (memory.bank.Stats, one per technique, best first): ideas calls only.
    priors: list = field(default_factory=list)
    prior_scope: str = ""  # what "similar" meant: "softmax, medium inputs, NVIDIA H200, CUDA through NVRTC"
    menu: list = field(default_factory=list)  # (title, technique, description) of the playbook's recipes offered
    prior_calibration: object = None  # memory.bank.Calibration of the ideas model on similar problems, if measured
    lessons: list = field(default_factory=list)  # LessonShown: pitfalls the team approved on similar problems


@dataclass
class LessonShown:
    """A lesson a person approved, as a prompt carries it: its key's fields, then its words (untrusted)."""

    text: str
    verdict: str  # the failure it came from, e.g. "incorrect"
    reason_code: str = ""
    technique: str = ""


@dataclass
class KernelContext:
    """A kernel shown to the proposer: its source and how it fared."""

    id: int
    source: str
    status: str
    median_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    reason: str = ""
    idea_title: str = ""
    speed_of_light: str = ""  # e.g. "72% of the speed of light (floor 0.505 ms, memory-bound: ...)"
    errors: list = field(default_factory=list)  # the runner's per-distribution rows, as stored
    log: str = ""  # the compile log or the stderr tail of its evaluation
    speedup_vs_parent: float | None = None
    paired_eager_ms: float | None = None  # CPU: the eager time its speedup was measured against, timed beside it
    notes: tuple[str, ...] = ()  # the runner's advisories and notes (a fallback that ran): said, not verdicts
    profile: str = ""  # the runner's profile (prompts.profile_text), for a round's top kernels


@dataclass
class Failure:
    """What a repair turn is told: the runner's verdict on the broken kernel, verbatim."""

    verdict: str
    reason: str
    log: str = ""
    turn: int = 1  # this repair's number in the chain
    turns: int = 1  # the search's repair limit
    of_id: int | None = None  # the kernel the chain started from
    earlier: tuple[str, ...] = ()  # the chain's earlier attempts, oldest first: "#id: verdict: reason"


@dataclass
class TriedIdea:
    title: str
    description: str
    outcome: str  # e.g. "2/3 correct, best 1.8x vs compile" or "all failed: compile_error"
    reasons: list = field(default_factory=list)  # distinct runner reasons of its failed kernels
    briefs: tuple = ()  # (brief, how its kernel fared) per implementation
    technique: str = ""  # memory.keys.TECHNIQUES slug


@dataclass
class IdeaProposal:
    title: str
    description: str
    briefs: list = field(default_factory=list)  # K distinct implementation briefs, one per kernel call
    technique: str = "other"  # memory.keys.TECHNIQUES slug, as the proposer tagged it
    expected_speedup: float | None = None  # over the parent, as the proposer predicted


@dataclass
class KernelProposal:
    source: str  # a complete ModelNew module; "" when the reply had no usable code
    name: str = ""
    note: str = ""
    analysis: dict = field(default_factory=dict)  # the model's own: {bottleneck, plan, expected_speedup}, any missing
    lesson: str = ""  # a repair's one-line lesson for the team ("" when it gave none): proposed, not trusted


class Proposer:
    name = "base"
    capabilities = Capabilities()

    @classmethod
    def supports(cls, family: str, device: str) -> bool:
        """Whether it writes kernels for this op family on this device."""
        return cls.capabilities.any_problem

    def starting_kernel(self, problem: ProblemContext) -> tuple[KernelProposal, Exchange]:
        """Round 0: a straightforward translation of the reference into the kernel format."""
        raise NotImplementedError

    def ideas(self, problem: ProblemContext, parent: KernelContext, tried: list[TriedIdea], count: int,
              briefs: int = 1) -> tuple[list[IdeaProposal], Exchange]:
        """`count` ideas for `parent`, each with up to `briefs` distinct implementation briefs."""
        raise NotImplementedError

    def kernel(self, problem: ProblemContext, parent: KernelContext, idea: IdeaProposal, variant: int,
               brief: str = "") -> tuple[KernelProposal, Exchange]:
        """One implementation of `idea` applied to `parent`: variant `variant` (0..K-1), following
        `brief`, its own implementation brief (never its siblings')."""
        raise NotImplementedError

    def repair(self, problem: ProblemContext, broken: KernelContext, failure: Failure
               ) -> tuple[KernelProposal, Exchange]:
        raise NotImplementedError
