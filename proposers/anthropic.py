"""The LLM proposer: Anthropic's Messages API through the official `anthropic` SDK.

The API key comes only from the environment (ANTHROPIC_API_KEY) of the process that calls the
API (the task worker); it is never stored, logged, or passed on. Evaluation workers and
sandboxes never see it.

Prompts (proposers/prompts.py): a stable system prompt plus the problem and the bank as cached
system blocks (every call of a search, or of a round, shares them), then one user message: the
kernel the task is about behind its own breakpoint, and the task. Each step (ideas, kernel, repair)
may use its own model.

Replies come as tool calls (prompts.IDEAS_TOOL, prompts.KERNEL_TOOL: a JSON schema each), forced
unless effort or thinking is set (the API then refuses a forced tool, so the model may choose; with
thinking its reasoning heads the stored reply); a text reply
falls back to a JSON list of ideas or a ```python block. An unusable reply is asked for once
more, then a kernel becomes KernelProposal(source="") saying why, recorded as a NO_CODE kernel;
two replies calling no tool under tool_choice auto are a failed call.
Every request streams: the first event says the API has read the prompt (and written its cache),
which the engine waits for before it sends the calls that read that cache (proposers.base.REPLY_BEGUN).
Retries are ours, not the SDK's (`_send`): at most two on a timeout, more on 429/5xx/529 with the
wait the API asks for shared through the key's gate (proposers/base.Gate), then ProposerError.
"""

import json
import logging
import os
import random
import re
import time
from dataclasses import dataclass, field

import anthropic
import httpx2  # the SDK's HTTP library: a stream cut mid-reply raises its errors
from django.conf import settings

from memory.keys import technique_of

from . import agent, pack, prompts
from .base import (ABANDONED, Exchange, Gate, IdeaProposal, KernelProposal, ProblemContext, Proposer, ProposerError, Toolbox,
                   merge_exchanges, reply_begun)
from .capabilities import CAPABILITIES

log = logging.getLogger(__name__)

EFFORTS = CAPABILITIES["anthropic"].efforts
STEPS = ("ideas", "kernel", "repair")
CACHE_TTLS = ("5m", "1h")
# Worth trying again: 429, 5xx and 529 (overloaded), a dropped connection (before the reply, as the SDK
# raises it; or mid-stream, where its HTTP library's own error comes through). A timeout has its own count.
BUSY = (anthropic.RateLimitError, anthropic.InternalServerError, anthropic.APIConnectionError, httpx2.TransportError)
TIMEOUTS = (anthropic.APITimeoutError, httpx2.TimeoutException)
CONNECT_TIMEOUT_S = 10.0
RETRY_AFTER_MAX_S = 600.0
_NO_TOOL = ("the model replied twice without calling `{tool}` (tool_choice auto, with thinking or effort set) "
            "and without a usable text answer")


class AnthropicProposer(Proposer):
    name = "anthropic"
    capabilities = CAPABILITIES[name]

    def __init__(self, *, model: str = "", effort: str = "", timeout_retries: int = 2, busy_retries: int = 6,
                 backoff_seconds: float = 5.0, ideas_max_tokens: int = 4000, kernel_max_tokens: int = 16000,
                 timeout: float | None = None, gate: Gate | None = None, thinking: int = 0,
                 step_models: dict | None = None, cache_ttl: str | None = None, tools: Toolbox | None = None):
        api_key = os.environ.get("ANTHROPIC_API_KEY", "")
        if not api_key:
            raise ProposerError("ANTHROPIC_API_KEY is not set in this process's environment; the Anthropic proposer "
                                "cannot run. Set it for the task worker (qcluster) and restart it.")
        if effort and effort not in EFFORTS:
            raise ProposerError(f"Unknown effort {effort!r}: use one of {', '.join(EFFORTS)}.")
        self.model = model or settings.ANTHROPIC_MODEL
        # A model per step ("ideas", "kernel", "repair"); a step not named uses `model`.
        self.models = {step: (step_models or {}).get(step) or self.model for step in STEPS}
        self.effort = effort
        # The prompt cache's lifetime: "5m" (the API's default) or "1h" (writes cost 2x input, not 1.25x).
        self.cache_ttl = settings.ANTHROPIC_CACHE_TTL if cache_ttl is None else cache_ttl
        if self.cache_ttl not in CACHE_TTLS:
            raise ProposerError(f"Unknown cache lifetime {self.cache_ttl!r}: use 5m or 1h.")
        self.thinking = thinking  # budget_tokens of extended thinking; 0: none
        self.timeout_retries, self.busy_retries = timeout_retries, busy_retries
        self.backoff_seconds = backoff_seconds
        self.ideas_max_tokens = ideas_max_tokens
        self.kernel_max_tokens = kernel_max_tokens
        self.gate = gate or Gate()
        # Agent mode: kernel calls may compile, check and profile drafts (`tools`, runs in the evaluator's
        # sandbox) before they submit. Every call offers the same tools: tools head the cached prefix.
        self.toolbox = tools
        self.tools = list(prompts.TOOLS) + (list(prompts.AGENT_TOOLS) if tools else [])
        self.closed = False
        self.timeout = timeout if timeout is not None else settings.ANTHROPIC_TIMEOUT
        # Retries are ours (below), so that a pause the API asks for reaches every caller of the key.
        self.client = anthropic.Anthropic(
            api_key=api_key, base_url=settings.ANTHROPIC_BASE_URL or None, max_retries=0,
            timeout=anthropic.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT_S)),
        )

    def close(self) -> None:
        """Close the connections: calls in flight on other threads fail at once and are not tried again
        (a paused or cancelled search)."""
        self.closed = True
        self.client.close()

    # --- the four requests -------------------------------------------------------------------------

    def starting_kernel(self, problem):
        return self._kernel_call(problem, prompts.starting_kernel_task(), "kernel")

    def ideas(self, problem, parent, tried, count, briefs=1):
        task = prompts.ideas_task(tried, count, briefs, problem)
        subject = prompts.subject_block(problem, "parent", parent, self.cache_ttl)
        total, fresh, answered = None, [], False
        seen = {pack.repeat_key(t.title, t.technique) for t in tried}
        for attempt in range(2):  # one more try after an unparsable or repeating reply; both calls are paid for
            reply = self._call(problem, task, self.ideas_max_tokens, prompts.IDEAS_TOOL, "ideas", subject)
            total = reply.exchange if total is None else merge_exchanges(total, reply.exchange)
            proposals = ideas_from_tool(reply.tool_input) if reply.tool_input is not None else parse_ideas(reply.text)
            if proposals or proposals is not None and _says_none(reply.tool_input):
                answered = True  # an empty list in a well-formed call: no new ideas
                repeats = []
                for proposal in proposals:
                    key = pack.repeat_key(proposal.title, proposal.technique)
                    if key in seen:
                        repeats.append(proposal.title)
                    else:
                        fresh.append(proposal)
                        seen.add(key)
                if not repeats or len(fresh) >= count:
                    break
                log.info("anthropic: ideas reply repeated %d idea(s) already tried; asked again", len(repeats))
                task += prompts.ideas_repeated(repeats)
                continue
            log.warning("anthropic: ideas reply had no usable ideas (attempt %d)", attempt + 1)
            task += prompts.IDEAS_RETRY
        if answered:
            return fresh[:count], total
        if total.no_tool_replies == 2:
            raise ProposerError(_NO_TOOL.format(tool=prompts.IDEAS_TOOL["name"]), total)
        raise ProposerError("the model's ideas reply was neither a propose_ideas call nor a JSON list of "
                            "{title, description}, twice", total)

    def kernel(self, problem, parent, idea, variant, brief=""):
        return self._kernel_call(problem, prompts.kernel_task(idea, variant, brief), "kernel",
                                 prompts.subject_block(problem, "parent", parent, self.cache_ttl))

    def repair(self, problem, broken, failure):
        return self._kernel_call(problem, prompts.repair_task(broken, failure), "repair",
                                 prompts.subject_block(problem, "broken", broken, self.cache_ttl))

    # --- plumbing ------------------------------------------------------------------------------------

    def _kernel_call(self, problem, task, step, subject=None):
        """A kernel from a tool call or a fenced block; an unusable reply is asked for once more,
        then becomes an empty proposal saying why (a no-code node). Two replies without a tool call
        (the model may choose under tool_choice auto) are a failed call."""
        total, why = None, ""
        left = self.toolbox.cap if self.toolbox else 0  # tool runs left to this kernel, across both tries
        task += prompts.agent_note(left) if self.toolbox else ""
        for attempt in range(2):
            asked = task if attempt == 0 else task + prompts.KERNEL_RETRY.format(why=why)
            if self.toolbox:
                reply, left = agent.converse(self._call, self.toolbox, problem=problem, task=asked, step=step,
                                             subject=subject, max_tokens=self.kernel_max_tokens, left=left,
                                             may_force=not (self.effort or self.thinking))
            else:
                reply = self._call(problem, asked, self.kernel_max_tokens, prompts.KERNEL_TOOL, step, subject)
            total = reply.exchange if total is None else merge_exchanges(total, reply.exchange)
            source, why = kernel_from_reply(reply)
            if source:
                lesson = lesson_of(reply.tool_input) if step == "repair" else ""
                return KernelProposal(source=source, note=_note(reply), analysis=analysis_of(reply.tool_input),
                                      lesson=lesson), total
            if reply.exchange.no_tool_replies:
                why = f"it called no tool ({why})"
            log.warning("anthropic: kernel reply unusable (attempt %d): %s", attempt + 1, why)
        if total.no_tool_replies == 2:
            raise ProposerError(_NO_TOOL.format(tool=prompts.KERNEL_TOOL["name"]), total)
        return KernelProposal(source="", note=f"the model's reply was unusable twice; the last: {why}"), total

    def _call(self, problem: ProblemContext, task: str, max_tokens: int, tool: dict, step: str,
              subject: dict | None = None, turns: tuple = (), choice: dict | None = None) -> "Reply":
        """One request: the cached system blocks, then the kernel the task is about (`subject`, cached
        too) and the task; then, in agent mode, the tool turns so far (`turns`)."""
        system = prompts.system_blocks(problem, self.cache_ttl)
        content = [subject, {"type": "text", "text": task}] if subject else task
        prompt_text = "\n\n".join(block["text"] for block in system) + "\n\n" + (subject or {}).get("text", "") + task
        model = self.models[step]
        exchange = Exchange(prompt=prompt_text, model=model)
        # The API refuses a forced tool while effort (or thinking) is set: then the model may choose.
        # Both tools go with every call: tools head the cached prefix, so they must not change.
        if choice is None:
            choice = {"type": "auto"} if self.effort or self.thinking else {"type": "tool", "name": tool["name"]}
        request = {"model": model, "max_tokens": max_tokens, "system": system, "tools": self.tools,
                   "tool_choice": choice, "messages": [{"role": "user", "content": content}, *turns]}
        if self.effort:
            request["output_config"] = {"effort": self.effort}
        if self.thinking:  # the budget comes on top of the reply's own tokens (it must stay below max_tokens)
            request["thinking"] = {"type": "enabled", "budget_tokens": self.thinking}
            request["max_tokens"] = max_tokens + self.thinking
        started = time.monotonic()
        try:
            message = self._send(request)
        except ProposerError as exc:
            exchange.duration_s = time.monotonic() - started
            exc.exchange = exchange
            raise
        exchange.duration_s = time.monotonic() - started
        usage = message.usage
        exchange.model = message.model or model
        exchange.input_tokens = usage.input_tokens or 0
        exchange.output_tokens = usage.output_tokens or 0
        exchange.cache_read_tokens = usage.cache_read_input_tokens or 0
        exchange.cache_write_tokens = usage.cache_creation_input_tokens or 0
        exchange.cache_write_1h_tokens = _written_for_an_hour(usage, self.cache_ttl)
        text = "".join(getattr(b, "text", "") for b in message.content if getattr(b, "type", "") == "text")
        thought = "".join(getattr(b, "thinking", "") for b in message.content if getattr(b, "type", "") == "thinking")
        tool_input = next((b.input for b in message.content
                           if getattr(b, "type", "") == "tool_use" and getattr(b, "name", "") == tool["name"]), None)
        content = agent.blocks_of(message.content)
        uses = [b for b in content if b["type"] == "tool_use" and b["name"] != tool["name"]]
        # Counted: under tool_choice auto the model may answer in prose alone (asked again once by the caller).
        exchange.no_tool_replies = int(tool_input is None and not uses and choice["type"] == "auto")
        exchange.reply = text if tool_input is None else (
            (text + "\n\n" if text else "") + f"[{tool['name']}]\n" + json.dumps(tool_input, indent=1))
        if thought:  # the model's reasoning before its reply, kept with the exchange people read
            exchange.reply = f"[thinking]\n{thought}\n\n" + exchange.reply
        return Reply(text=text, tool_input=tool_input, stop_reason=message.stop_reason or "", exchange=exchange,
                     content=content, uses=uses)


    def _send(self, request: dict):
        """One request through the key's gate: a timeout is tried again at most `timeout_retries`
        times; a rate limit, overload or server error up to `busy_retries` times, waiting what the
        API asks (retry-after: every caller of the key waits it) or a growing backoff."""
        timeouts = busy = 0
        while True:
            if self.closed:
                raise ProposerError(ABANDONED)
            self.gate.wait(lambda: self.closed)
            try:
                with self.gate.slot(lambda: self.closed):
                    # Streamed: long replies keep the connection busy, and the first event tells the
                    # caller the prompt is read (its cache written) before the reply is done.
                    with self.client.messages.stream(**request) as stream:
                        for _event in stream:
                            reply_begun()
                            break
                        return stream.get_final_message()
            except TIMEOUTS as exc:
                timeouts += 1
                if timeouts > self.timeout_retries:
                    raise ProposerError(f"the Anthropic API did not answer within {self.timeout:g} s, {timeouts} times "
                                        "in a row") from exc
                log.warning("anthropic: no answer within %g s; trying again", self.timeout)
            except BUSY as exc:
                busy += 1
                if self.closed:
                    raise ProposerError(ABANDONED) from exc
                if busy > self.busy_retries:
                    raise ProposerError(f"the Anthropic API kept failing ({_describe(exc)})") from exc
                asked = _retry_after(exc)
                wait = asked if asked is not None else (
                    self.backoff_seconds * (2 ** (busy - 1)) * (0.75 + random.random() / 2))
                log.warning("anthropic: %s; trying again in %.1f s", _describe(exc), wait)
                if asked is not None and getattr(exc, "status_code", None) in (429, 529):
                    self.gate.pause(wait)  # the key's other callers wait too
                else:
                    time.sleep(wait)
            except anthropic.APIStatusError as exc:  # 400, 401, 403, 404...: retrying will not help
                raise ProposerError(f"the Anthropic API refused the request ({_describe(exc)})") from exc


def _written_for_an_hour(usage, ttl: str) -> int:
    """The cache writes of the 1-hour lifetime: as the API splits them, else all of them under ttl 1h."""
    split = getattr(usage, "cache_creation", None)
    hour = getattr(split, "ephemeral_1h_input_tokens", None)
    if hour is not None:
        return hour
    return (usage.cache_creation_input_tokens or 0) if ttl == "1h" else 0


def _retry_after(exc: Exception) -> float | None:
    """The wait the API asked for (retry-after-ms, retry-after in seconds), at most RETRY_AFTER_MAX_S."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return min(float(headers[name]) / scale, RETRY_AFTER_MAX_S)
        except (KeyError, TypeError, ValueError):
            continue
    return None


@dataclass
class Reply:
    text: str
    tool_input: object  # the tool call's input as decoded by the SDK, or None without a tool call
    stop_reason: str
    exchange: Exchange
    content: list = field(default_factory=list)  # the reply's blocks as the next turn sends them back
    uses: list = field(default_factory=list)  # its calls of tools other than the one asked for (agent mode)


def _says_none(data) -> bool:
    return isinstance(data, dict) and data.get("ideas") == []


def ideas_from_tool(data) -> list[IdeaProposal]:
    items = data.get("ideas") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    return [_idea(item) for item in items if isinstance(item, dict) and str(item.get("title", "")).strip()]


def _idea(item: dict) -> IdeaProposal:
    briefs = item.get("briefs")
    briefs = [str(b).strip() for b in briefs if str(b).strip()] if isinstance(briefs, list) else []
    return IdeaProposal(str(item.get("title", "")).strip()[:300], str(item.get("description", "")).strip(), briefs,
                        technique=technique_of(str(item.get("technique") or "")),
                        expected_speedup=_speedup(item.get("expected_speedup")))


def _speedup(value) -> float | None:
    """A predicted speedup the model gave, when it is a plausible number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1000:
        return float(value)
    return None


def kernel_from_reply(reply: "Reply") -> tuple[str, str]:
    """(source, "") from a submit_kernel call or a fenced block, else ("", why not)."""
    if reply.tool_input is not None:
        source = reply.tool_input.get("source") if isinstance(reply.tool_input, dict) else None
        if isinstance(source, str) and "class ModelNew" in source:
            return source.strip() + "\n", ""
        return "", "the submit_kernel call had no `source` defining class ModelNew"
    return extract_module(reply.text, reply.stop_reason)


def _note(reply: "Reply") -> str:
    if isinstance(reply.tool_input, dict) and isinstance(reply.tool_input.get("note"), str):
        return reply.tool_input["note"][:1000]
    return ""


ANALYSIS_CHARS = 1000


def analysis_of(data) -> dict:
    """The model's own analysis from a submit_kernel call, its well-formed parts only."""
    given = data.get("analysis") if isinstance(data, dict) else None
    if not isinstance(given, dict):
        return {}
    analysis = {key: given[key].strip()[:ANALYSIS_CHARS] for key in ("bottleneck", "plan")
                if isinstance(given.get(key), str) and given[key].strip()}
    expected = _speedup(given.get("expected_speedup"))
    if expected is not None:
        analysis["expected_speedup"] = expected
    return analysis


def lesson_of(data) -> str:
    """A repair's `lesson`, on one line and cut to prompts.LESSON_CHARS ("" when absent or not text)."""
    given = data.get("lesson") if isinstance(data, dict) else None
    return " ".join(given.split())[:prompts.LESSON_CHARS] if isinstance(given, str) else ""


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    return f"{kind} {status}" if status else kind


_JSON_BLOCK = re.compile(r"```(?:json)?\s*\n(.*?)(?:```|\Z)", re.S)


def parse_ideas(reply: str) -> list[IdeaProposal]:
    """Ideas from a reply: a JSON list (fenced or bare); from a truncated list, the complete items."""
    candidates = [m.group(1) for m in _JSON_BLOCK.finditer(reply)] + [reply]
    for text in candidates:
        start = text.find("[")
        if start < 0:
            continue
        items = _json_objects(text[start + 1:])
        ideas = [_idea(i) for i in items if isinstance(i, dict) and str(i.get("title", "")).strip()]
        if ideas:
            return ideas
    return []


def _json_objects(text: str) -> list:
    """Decode the objects of a JSON list one by one, stopping at the first broken one."""
    decoder = json.JSONDecoder()
    items, pos = [], 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return items
        try:
            item, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return items
        items.append(item)


_PYTHON_BLOCK = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.S)


def extract_module(reply: str, stop_reason: str = "") -> tuple[str, str]:
    """(source, note): the last complete ```python block that defines ModelNew, or "" and why not."""
    blocks = [b for b in _PYTHON_BLOCK.findall(reply) if "class ModelNew" in b]
    if blocks:
        return blocks[-1].strip() + "\n", ""
    if stop_reason == "max_tokens":
        return "", "the reply was cut off (max_tokens) before its code block was complete"
    if "```" in reply:
        return "", "the reply's code block does not define class ModelNew (or is not closed)"
    return "", "the reply had no ```python code block"
