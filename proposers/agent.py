"""Agent mode: a kernel call as a bounded tool loop.

The model may call `compile`, `check` and `profile` on a draft before it calls `submit_kernel`
(tool_choice auto). Each tool call is run by the toolbox (the engine's: a runner job in the
evaluator's sandbox, searches/engine/tools.py) and answered with a tool_result in the next turn;
the reply's blocks go back as they came, thinking blocks first, as the API requires of tool turns.
The loop ends at `submit_kernel`, at a reply that calls no tool, or once `left` runs are spent:
then one last turn asks for the kernel (forced where the API allows a forced tool). Tool answers
are advice: the submitted kernel is judged afresh.
"""

import json

from . import prompts
from .base import ProposerError, Toolbox, ToolRun, merge_exchanges

AGENT_TOOL_NAMES = tuple(tool["name"] for tool in prompts.AGENT_TOOLS)
SHOWN_SOURCE_CHARS = 400  # of a draft's source in the stored exchange (the runs are what people read)


def blocks_of(content) -> list[dict]:
    """The reply's content blocks as request blocks (only the fields the API takes back)."""
    blocks = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            blocks.append({"type": "text", "text": block.text})
        elif kind == "thinking":
            blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
        elif kind == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": block.data})
        elif kind == "tool_use":
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
    return blocks


def converse(call, toolbox: Toolbox, *, problem, task: str, step: str, subject, max_tokens: int, left: int,
             may_force: bool):
    """(the last reply, with the whole loop's exchange; tool runs left). `call` sends one request
    (AnthropicProposer's, given `turns` and `choice`)."""
    turns, total, cap = [], None, toolbox.cap
    while True:
        # the cap spent, or as many turns as the cap allows runs (calls of other tools run nothing)
        last = bool(turns) and (left <= 0 or len(turns) >= 2 * (cap + 1))
        choice = ({"type": "tool", "name": prompts.KERNEL_TOOL["name"]} if last and may_force else {"type": "auto"})
        reply = call(problem, task, max_tokens, prompts.KERNEL_TOOL, step, subject, turns=tuple(turns), choice=choice)
        total = reply.exchange if total is None else merge_exchanges(total, reply.exchange, "\n\n")
        if reply.tool_input is not None or not reply.uses or last:
            reply.exchange = total
            return reply, left
        results = []
        for use in reply.uses:
            try:
                outcome, ran = _answer(toolbox, use, left, cap)
            except ProposerError as exc:  # the turns so far were paid for: the call keeps them
                exc.exchange = total
                raise
            left -= ran
            total.tool_calls += ran
            counted = f", tool call {total.tool_calls} of {cap}" if ran else ""
            total.reply += f"\n\n{shown_call(use)}\n[{use['name']} result{counted}]\n{outcome.text}"
            results.append({"type": "tool_result", "tool_use_id": use["id"], "content": outcome.text,
                            **({"is_error": True} if outcome.is_error else {})})
        if left <= 0:
            results.append({"type": "text", "text": prompts.agent_last_turn(cap)})
        turns += [{"role": "assistant", "content": reply.content}, {"role": "user", "content": results}]


def _answer(toolbox: Toolbox, use: dict, left: int, cap: int):
    """(the tool_result's answer, 1 when a run was made)."""
    name, arguments = use["name"], use["input"] if isinstance(use["input"], dict) else {}
    if name not in AGENT_TOOL_NAMES:
        return _refusal(f"`{name}` is not a tool of this task: call `submit_kernel` with your kernel"), 0
    if left <= 0:
        return _refusal(f"not run: this kernel's {cap} tool calls are used up"), 0
    return toolbox.run(name, arguments), 1  # ProposerError: the search stopped while it waited


def _refusal(text: str) -> ToolRun:
    return ToolRun(text, is_error=True)


def shown_call(use: dict) -> str:
    """A tool call as the stored exchange shows it (a draft's source cut short)."""
    arguments = {k: (v if len(str(v)) <= SHOWN_SOURCE_CHARS else str(v)[:SHOWN_SOURCE_CHARS] + " [...]")
                 for k, v in (use["input"] if isinstance(use["input"], dict) else {}).items()}
    return f"[{use['name']}]\n" + json.dumps(arguments, indent=1)

