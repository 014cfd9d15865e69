"""The LLM proposer: Anthropic's Messages API through the official `anthropic` SDK.

The API key comes only from the environment (ANTHROPIC_API_KEY) of the process that calls the
API (the task worker); it is never stored, logged, or passed on. Evaluation workers and
sandboxes never see it.

Prompts (proposers/prompts.py): a stable system prompt plus the problem as a second, cached
system block (prompt caching: every call of a search shares it), then one user message per task.

Replies come as tool calls (prompts.IDEAS_TOOL, prompts.KERNEL_TOOL: a JSON schema each), forced
unless effort is set (the API then refuses a forced tool, so the model may choose); a text reply
falls back to a JSON list of ideas or a ```python block. An unusable reply is asked for once
more, then a kernel becomes KernelProposal(source="") saying why, recorded as a NO_CODE kernel. Retries: the SDK's own (429, 5xx, timeouts, with backoff and
retry-after) and then ours, a few more with longer waits, before giving up with ProposerError.
"""

import json
import logging
import os
import random
import re
import time
from dataclasses import dataclass

import anthropic
from django.conf import settings

from . import pack, prompts
from .base import Exchange, IdeaProposal, KernelProposal, ProblemContext, Proposer, ProposerError

log = logging.getLogger(__name__)

EFFORTS = ("low", "medium", "high", "xhigh", "max")
RETRYABLE = (anthropic.RateLimitError, anthropic.InternalServerError, anthropic.APIConnectionError)


class AnthropicProposer(Proposer):
    name = "anthropic"

    def __init__(self, *, model: str = "", effort: str = "", max_retries: int = 2, extra_retries: int = 3,
                 backoff_seconds: float = 5.0, ideas_max_tokens: int = 4000, kernel_max_tokens: int = 16000,
                 timeout: float | None = None):
        api_key = os.environ.get("ANTHROPIC_API_KEY", "")
        if not api_key:
            raise ProposerError("ANTHROPIC_API_KEY is not set in this process's environment; the Anthropic proposer "
                                "cannot run. Set it for the task worker (qcluster) and restart it.")
        if effort and effort not in EFFORTS:
            raise ProposerError(f"Unknown effort {effort!r}: use one of {', '.join(EFFORTS)}.")
        self.model = model or settings.ANTHROPIC_MODEL
        self.effort = effort
        self.extra_retries = extra_retries
        self.backoff_seconds = backoff_seconds
        self.ideas_max_tokens = ideas_max_tokens
        self.kernel_max_tokens = kernel_max_tokens
        self.client = anthropic.Anthropic(
            api_key=api_key, base_url=settings.ANTHROPIC_BASE_URL or None, max_retries=max_retries,
            timeout=timeout if timeout is not None else settings.ANTHROPIC_TIMEOUT,
        )

    # --- the four requests -------------------------------------------------------------------------

    def starting_kernel(self, problem):
        return self._kernel_call(problem, prompts.starting_kernel_task())

    def ideas(self, problem, parent, tried, count, briefs=1):
        task = prompts.ideas_task(parent, tried, count, briefs)
        total, fresh, answered = None, [], False
        seen = {pack.idea_key(t.title) for t in tried}
        for attempt in range(2):  # one more try after an unparsable or repeating reply; both calls are paid for
            reply = self._call(problem, task, self.ideas_max_tokens, prompts.IDEAS_TOOL)
            total = reply.exchange if total is None else _merge(total, reply.exchange)
            proposals = ideas_from_tool(reply.tool_input) if reply.tool_input is not None else parse_ideas(reply.text)
            if proposals or proposals is not None and _says_none(reply.tool_input):
                answered = True  # an empty list in a well-formed call: no new ideas
                repeats = []
                for proposal in proposals:
                    key = pack.idea_key(proposal.title)
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
        raise ProposerError("the model's ideas reply was neither a propose_ideas call nor a JSON list of "
                            "{title, description}, twice", total)

    def kernel(self, problem, parent, idea, variant, brief=""):
        return self._kernel_call(problem, prompts.kernel_task(parent, idea, variant, brief))

    def repair(self, problem, broken, failure):
        return self._kernel_call(problem, prompts.repair_task(broken, failure))

    # --- plumbing ------------------------------------------------------------------------------------

    def _kernel_call(self, problem, task):
        """A kernel from a tool call or a fenced block; an unusable reply is asked for once more,
        then becomes an empty proposal saying why (a no-code node)."""
        total, why = None, ""
        for attempt in range(2):
            reply = self._call(problem, task if attempt == 0 else task + prompts.KERNEL_RETRY.format(why=why),
                               self.kernel_max_tokens, prompts.KERNEL_TOOL)
            total = reply.exchange if total is None else _merge(total, reply.exchange)
            source, why = kernel_from_reply(reply)
            if source:
                return KernelProposal(source=source, note=_note(reply)), total
            log.warning("anthropic: kernel reply unusable (attempt %d): %s", attempt + 1, why)
        return KernelProposal(source="", note=f"the model's reply was unusable twice; the last: {why}"), total

    def _call(self, problem: ProblemContext, task: str, max_tokens: int, tool: dict) -> "Reply":
        system = prompts.system_blocks(problem)
        prompt_text = "\n\n".join(block["text"] for block in system) + "\n\n" + task
        exchange = Exchange(prompt=prompt_text, model=self.model)
        # The API refuses a forced tool while effort (or thinking) is set: then the model may choose.
        # Both tools go with every call: tools head the cached prefix, so they must not change.
        choice = {"type": "auto"} if self.effort else {"type": "tool", "name": tool["name"]}
        request = {"model": self.model, "max_tokens": max_tokens, "system": system, "tools": list(prompts.TOOLS),
                   "tool_choice": choice, "messages": [{"role": "user", "content": task}]}
        if self.effort:
            request["output_config"] = {"effort": self.effort}
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                message = self.client.messages.create(**request)
                break
            except RETRYABLE as exc:
                attempt += 1
                if attempt > self.extra_retries:
                    exchange.duration_s = time.monotonic() - started
                    raise ProposerError(f"the Anthropic API kept failing ({_describe(exc)})", exchange) from exc
                wait = self.backoff_seconds * (2 ** (attempt - 1)) * (0.75 + random.random() / 2)
                log.warning("anthropic: %s; retrying in %.1f s", _describe(exc), wait)
                time.sleep(wait)
            except anthropic.APIStatusError as exc:  # 400, 401, 403, 404...: retrying will not help
                exchange.duration_s = time.monotonic() - started
                raise ProposerError(f"the Anthropic API refused the request ({_describe(exc)})", exchange) from exc
        exchange.duration_s = time.monotonic() - started
        usage = message.usage
        exchange.model = message.model or self.model
        exchange.input_tokens = usage.input_tokens or 0
        exchange.output_tokens = usage.output_tokens or 0
        exchange.cache_read_tokens = usage.cache_read_input_tokens or 0
        exchange.cache_write_tokens = usage.cache_creation_input_tokens or 0
        text = "".join(getattr(b, "text", "") for b in message.content if getattr(b, "type", "") == "text")
        tool_input = next((b.input for b in message.content
                           if getattr(b, "type", "") == "tool_use" and getattr(b, "name", "") == tool["name"]), None)
        exchange.reply = text if tool_input is None else (
            (text + "\n\n" if text else "") + f"[{tool['name']}]\n" + json.dumps(tool_input, indent=1))
        return Reply(text=text, tool_input=tool_input, stop_reason=message.stop_reason or "", exchange=exchange)


@dataclass
class Reply:
    text: str
    tool_input: object  # the tool call's input as decoded by the SDK, or None without a tool call
    stop_reason: str
    exchange: Exchange


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
    return IdeaProposal(str(item.get("title", "")).strip()[:300], str(item.get("description", "")).strip(), briefs)


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


def _merge(first: Exchange, second: Exchange) -> Exchange:
    return Exchange(
        prompt=second.prompt, reply=first.reply + "\n\n----- retry -----\n\n" + second.reply, model=second.model,
        input_tokens=first.input_tokens + second.input_tokens, output_tokens=first.output_tokens + second.output_tokens,
        cache_read_tokens=first.cache_read_tokens + second.cache_read_tokens,
        cache_write_tokens=first.cache_write_tokens + second.cache_write_tokens,
        duration_s=first.duration_s + second.duration_s,
    )


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
