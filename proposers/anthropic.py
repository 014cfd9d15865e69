"""The LLM proposer: Anthropic's Messages API through the official `anthropic` SDK.

The API key comes only from the environment (ANTHROPIC_API_KEY) of the process that calls the
API (the task worker); it is never stored, logged, or passed on. Evaluation workers and
sandboxes never see it.

Prompts (proposers/prompts.py): a stable system prompt plus the problem as a second, cached
system block (prompt caching: every call of a search shares it), then one user message per task.

Replies: ideas as a JSON list of {"title", "description"}; a kernel as one complete module in
a ```python block. A reply without usable code becomes KernelProposal(source=""), recorded
as a NO_CODE kernel. Retries: the SDK's own (429, 5xx, timeouts, with backoff and
retry-after) and then ours, a few more with longer waits, before giving up with ProposerError.
"""

import json
import logging
import os
import random
import re
import time

import anthropic
from django.conf import settings

from . import prompts
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

    def ideas(self, problem, parent, tried, count):
        task = prompts.ideas_task(parent, tried, count)
        total = None
        for attempt in range(2):  # one more try after an unparsable reply; both calls are paid for
            reply, exchange, _ = self._call(problem, task, self.ideas_max_tokens)
            total = exchange if total is None else _merge(total, exchange)
            proposals = parse_ideas(reply)
            if proposals:
                return proposals[:count], total
            log.warning("anthropic: ideas reply had no usable JSON list (attempt %d)", attempt + 1)
            task += prompts.IDEAS_RETRY
        raise ProposerError("the model's ideas reply was not a JSON list of {title, description}, twice", total)

    def kernel(self, problem, parent, idea, variant):
        return self._kernel_call(problem, prompts.kernel_task(parent, idea, variant))

    def repair(self, problem, broken, compiler_log):
        return self._kernel_call(problem, prompts.repair_task(broken, compiler_log))

    # --- plumbing ------------------------------------------------------------------------------------

    def _kernel_call(self, problem, task):
        reply, exchange, stop_reason = self._call(problem, task, self.kernel_max_tokens)
        source, note = extract_module(reply, stop_reason)
        return KernelProposal(source=source, note=note), exchange

    def _call(self, problem: ProblemContext, task: str, max_tokens: int) -> tuple[str, Exchange, str]:
        system = prompts.system_blocks(problem)
        prompt_text = "\n\n".join(block["text"] for block in system) + "\n\n" + task
        exchange = Exchange(prompt=prompt_text, model=self.model)
        request = {"model": self.model, "max_tokens": max_tokens, "system": system,
                   "messages": [{"role": "user", "content": task}]}
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
        exchange.reply = "".join(getattr(block, "text", "") for block in message.content
                                 if getattr(block, "type", "") == "text")
        return exchange.reply, exchange, message.stop_reason or ""


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
        ideas = [IdeaProposal(str(i.get("title", "")).strip()[:300], str(i.get("description", "")).strip())
                 for i in items if isinstance(i, dict) and str(i.get("title", "")).strip()]
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
