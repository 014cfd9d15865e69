"""A local stand-in for Anthropic's Messages API, for tests that drive the real `anthropic` SDK.

It speaks `POST /v1/messages` (JSON in, a `message` object out, with usage counts including
prompt-cache reads and writes) and the API's error shape (`{"type": "error", "error": {...}}`).
Tests queue behaviours (an error status with or without retry-after, a delay longer than the
client's timeout, thinking time, a given reply text or tool call); otherwise `responder(seen)`
writes the reply: a string is a text reply, a dict the input of a call of the tool the request
forces (or of its first tool), after `latency(seen)` seconds when set. Every request is kept in
`requests` (headers included), its timing in `spans`, and the most requests at once in
`max_in_flight`, for assertions.

Like the API: a forced `tool_choice` with effort or thinking set is refused (400), and so is a thinking
budget under 1024 tokens or not under `max_tokens`, a temperature with thinking, an assistant tool turn
without its thinking block while thinking is on, a tool call not answered by a tool_result first in the
next user turn (or a tool_result answering none), more than four cache breakpoints, or a 1-hour
breakpoint after a 5-minute one (cache writes are reported per lifetime); `stream: true` is
answered with the API's server-sent events (thinking, text and tool blocks); the prompt cache
works on prefixes (tools, then system blocks, then messages) ending at a `cache_control` block, per model:
the longest prefix seen before is billed as cache reads, the rest up to the last breakpoint as a
cache write, the remainder as input.
"""

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}


@dataclass
class Behaviour:
    status: int = 200
    delay: float = 0.0  # seconds to hang, then drop the connection without an answer (a timeout)
    cut: bool = False  # a streamed reply stops after its first event, the connection dropped (a network cut)
    reply: str | None = None  # text of the reply; None: ask the responder
    stop_reason: str = "end_turn"
    tool_input: object = None  # a tool call's input (any JSON, malformed on purpose included)
    latency: float = 0.0  # seconds to think before answering (a real model's time)
    retry_after: float | None = None  # seconds, sent as retry-after with an error status


@dataclass
class ToolCall:
    """A responder's answer calling a tool by name (agent mode: compile, check, profile...)."""

    name: str
    input: dict


@dataclass
class Seen:
    headers: dict
    body: dict
    answered: int = 0

    @property
    def system_text(self) -> str:
        system = self.body.get("system") or []
        return system if isinstance(system, str) else "\n".join(block.get("text", "") for block in system)

    @property
    def user_text(self) -> str:
        parts = []
        for message in self.body.get("messages", []):
            content = message.get("content")
            parts.append(content if isinstance(content, str) else
                         "".join(block.get("text", "") for block in content))
        return "\n".join(parts)

    @property
    def tool_results(self) -> list[dict]:
        """The tool_result blocks of the request's last user turn (agent mode), in order."""
        content = (self.body.get("messages") or [{}])[-1].get("content")
        return [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []

    @property
    def forced_tool(self) -> str:
        choice = self.body.get("tool_choice") or {}
        return choice.get("name", "") if choice.get("type") == "tool" else ""

    def cache_segments(self) -> list[tuple[str, str]]:
        """The request's prompt in cache order, as (text, its breakpoint's lifetime: "5m", "1h" or "") pieces."""
        pieces = [(json.dumps(tool, sort_keys=True), _ttl(tool)) for tool in self.body.get("tools") or []]
        system = self.body.get("system") or []
        if isinstance(system, str):
            pieces.append((system, ""))
        else:
            pieces += [(block.get("text", ""), _ttl(block)) for block in system]
        for message in self.body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                pieces.append((content, ""))
            else:
                pieces += [(block.get("text", "") or json.dumps(block), _ttl(block)) for block in content]
        return pieces


def _ttl(block: dict) -> str:
    control = block.get("cache_control")
    return (control.get("ttl") or "5m") if isinstance(control, dict) else ""


def approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class FakeAnthropic:
    responder: object = None  # callable(Seen) -> str
    script: list = field(default_factory=list)  # Behaviours used first, in order
    requests: list = field(default_factory=list)
    usage_given: dict = field(default_factory=lambda: {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0})
    latency: object = None  # callable(Seen) -> seconds to think before each scripted-or-responder answer
    first_token_s: float = 0.05  # of that latency, before the reply begins: the prompt is read, its cache written
    in_flight: int = 0
    max_in_flight: int = 0
    spans: list = field(default_factory=list)  # (arrived, answered, task, status, reply began or None), monotonic s

    def __post_init__(self):
        self._lock = threading.Lock()
        self._arrivals: dict[int, float] = {}  # when each request still being answered arrived, monotonic s
        self._cached: set[str] = set()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                fake._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def open_since(self) -> list[float]:
        """When each request still being answered arrived (monotonic s)."""
        with self._lock:
            return list(self._arrivals.values())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # --- the API ---------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        if handler.path.split("?")[0] != "/v1/messages":
            return self._send(handler, 404, _error(404, f"no route {handler.path}"))
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(handler, 400, _error(400, "request body is not JSON"))
        seen = Seen(headers={k.lower(): v for k, v in handler.headers.items()}, body=body)
        with self._lock:
            self.requests.append(seen)
            behaviour = self.script.pop(0) if self.script else Behaviour()
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            arrived = self._arrivals[id(seen)] = time.monotonic()
        begun = None
        try:
            begun = self._answer(handler, seen, body, behaviour)
        finally:
            with self._lock:
                self.in_flight -= 1
                del self._arrivals[id(seen)]
                self.spans.append((arrived, time.monotonic(), task_of(seen), behaviour.status, begun))

    def _answer(self, handler, seen: "Seen", body: dict, behaviour: Behaviour) -> float | None:
        """Answer the request; when the reply began (None for an error or no answer)."""
        if behaviour.delay:
            time.sleep(behaviour.delay)
            handler.close_connection = True
            return None  # nothing delivered, nothing billed
        thinking = behaviour.latency or (self.latency(seen) if self.latency else 0.0)
        head = min(thinking, self.first_token_s)
        time.sleep(head)
        rest = thinking - head
        if behaviour.status != 200:
            time.sleep(rest)
            headers = {"retry-after-ms": "20"} if behaviour.status == 429 else {}
            if behaviour.retry_after is not None:
                headers = {"retry-after": f"{behaviour.retry_after:g}"}
            return self._send(handler, behaviour.status, _error(behaviour.status, "fake failure"), headers)
        refused = _thinking_refused(body) or _tool_turns_refused(body) or _cache_refused(seen)
        if seen.forced_tool and (body.get("output_config", {}).get("effort") or body.get("thinking")):
            refused = "tool_choice forces tool use, which is not compatible with thinking or effort"
        if refused:
            time.sleep(rest)
            return self._send(handler, 400, _error(400, refused))
        if behaviour.tool_input is not None:
            answer = behaviour.tool_input
        else:
            answer = behaviour.reply if behaviour.reply is not None else self.responder(seen)
        message = self._message(seen, answer, behaviour.stop_reason)  # the prompt cache is written now
        begun = time.monotonic()
        if body.get("stream"):
            self._stream(handler, message, rest, behaviour.cut)  # message_start at once, the rest when done
        else:
            time.sleep(rest)
            self._send(handler, 200, message)
        return begun

    def _usage(self, seen: Seen) -> dict:
        pieces = seen.cache_segments()
        prefixes, text, ttl = [], str(seen.body.get("model")) + "\x00", "5m"  # each model has its own cache
        for piece, lifetime in pieces:
            text += piece + "\x00"
            if lifetime:
                prefixes.append(text)
                ttl = lifetime
        total = approx_tokens(text)
        with self._lock:
            read = max((p for p in prefixes if p in self._cached), key=len, default="")
            self._cached.update(prefixes)
        written = prefixes[-1] if prefixes else ""
        read_tokens = approx_tokens(read) if read else 0
        write_tokens = approx_tokens(written) - read_tokens if written and written != read else 0
        return {"input_tokens": max(1, total - read_tokens - write_tokens),
                "cache_read_input_tokens": read_tokens, "cache_creation_input_tokens": write_tokens,
                "cache_creation": {"ephemeral_5m_input_tokens": write_tokens if ttl == "5m" else 0,
                                   "ephemeral_1h_input_tokens": write_tokens if ttl == "1h" else 0}}

    def _message(self, seen: Seen, answer, stop_reason: str) -> dict:
        if isinstance(answer, str):
            content, out_text = [{"type": "text", "text": answer}], answer
        elif isinstance(answer, ToolCall):  # a forced tool_choice still decides the tool, as the API does
            name = seen.forced_tool or answer.name
            content = [{"type": "tool_use", "id": f"toolu_fake_{len(self.requests)}", "name": name, "input": answer.input}]
            out_text, stop_reason = json.dumps(answer.input), "tool_use"
        else:
            tools = [t.get("name") for t in seen.body.get("tools") or []]
            # Unforced, the model calls the tool its task asks for.
            asked = [t for t in tools if f"`{t}`" in seen.user_text]
            name = seen.forced_tool or (asked or tools or ["tool"])[0]
            content = [{"type": "tool_use", "id": f"toolu_fake_{len(self.requests)}", "name": name, "input": answer}]
            out_text, stop_reason = json.dumps(answer), "tool_use" if stop_reason == "end_turn" else stop_reason
        if (seen.body.get("thinking") or {}).get("type") == "enabled":
            thought = "The bottleneck is memory traffic; one pass over the rows should do."
            content.insert(0, {"type": "thinking", "thinking": thought, "signature": "fake-signature"})
            out_text += thought
        usage = {**self._usage(seen), "output_tokens": approx_tokens(out_text)}
        with self._lock:
            self.usage_given["input"] += usage["input_tokens"]
            self.usage_given["output"] += usage["output_tokens"]
            self.usage_given["cache_read"] += usage["cache_read_input_tokens"]
            self.usage_given["cache_write"] += usage["cache_creation_input_tokens"]
        return {"id": f"msg_fake_{len(self.requests)}", "type": "message", "role": "assistant",
                "model": seen.body.get("model", "fake"), "content": content,
                "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}

    @staticmethod
    def _stream(handler, message: dict, rest: float, cut: bool = False) -> None:
        """The message as the API streams it: server-sent events, one content block at a time; the
        first (message_start) at once, the others `rest` seconds later (never, when `cut`)."""
        usage = dict(message["usage"])
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [("message_start", {"type": "message_start", "message": start})]
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                opened, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            elif block["type"] == "thinking":
                opened, delta = {"type": "thinking", "thinking": ""}, {"type": "thinking_delta", "thinking": block["thinking"]}
            else:
                opened = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
            if block["type"] == "thinking":
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "signature_delta", "signature": block["signature"]}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": message["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": usage["output_tokens"]}}))
        events.append(("message_stop", {"type": "message_stop"}))
        chunks = [f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode() for name, payload in events]
        try:
            handler.send_response(200)
            handler.send_header("content-type", "text/event-stream")
            handler.send_header("content-length", str(sum(map(len, chunks))))
            handler.end_headers()
            handler.wfile.write(chunks[0])
            handler.wfile.flush()
            time.sleep(rest)
            if cut:
                handler.close_connection = True
                return
            handler.wfile.write(b"".join(chunks[1:]))
        except (BrokenPipeError, ConnectionResetError):
            pass

    @staticmethod
    def _send(handler, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            handler.send_response(status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.send_header("request-id", "req_fake")
            for key, value in (headers or {}).items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)


def _thinking_refused(body: dict) -> str:
    """What the real API says of a request's thinking settings, or "" when it accepts them."""
    thinking = body.get("thinking")
    if not thinking or thinking.get("type") != "enabled":
        return ""
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    if budget >= body.get("max_tokens", 0):
        return "`max_tokens` must be greater than `thinking.budget_tokens`"
    if "temperature" in body and body["temperature"] != 1:
        return "`temperature` may only be set to 1 when thinking is enabled"
    turns = [m for m in body.get("messages", []) if m.get("role") == "assistant" and isinstance(m.get("content"), list)]
    for index, turn in enumerate(turns):
        kinds = [block.get("type") for block in turn["content"]]
        if "tool_use" in kinds and kinds[0] not in ("thinking", "redacted_thinking"):
            return (f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                    f"`{kinds[0]}`. When `thinking` is enabled, an assistant tool turn must start with its thinking block")
    return ""


def _tool_turns_refused(body: dict) -> str:
    """What the real API says of tool turns: each tool_use answered by a tool_result at the head of the
    next user message, and no tool_result without its tool_use; "" when they are well formed."""
    messages = body.get("messages", [])
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message.get("content"), list) else []
        if message.get("role") == "assistant":
            ids = [b.get("id") for b in content if b.get("type") == "tool_use"]
            following = messages[index + 1].get("content") if index + 1 < len(messages) else None
            answered = [b.get("tool_use_id") for b in following or [] if isinstance(b, dict)][:len(ids)]
            if ids and sorted(answered) != sorted(ids):
                return (f"messages.{index + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                        f"after: {', '.join(i for i in ids if i not in answered)}. Each `tool_use` block must have a "
                        "corresponding `tool_result` block in the next message.")
        elif message.get("role") == "user":
            results = [b.get("tool_use_id") for b in content if b.get("type") == "tool_result"]
            before = messages[index - 1].get("content") if index > 0 else None
            used = {b.get("id") for b in before or [] if isinstance(b, dict) and b.get("type") == "tool_use"}
            if any(r not in used for r in results):
                return (f"messages.{index}.content: unexpected `tool_use_id` found in `tool_result` blocks. Each "
                        "`tool_result` block must have a corresponding `tool_use` block in the previous message.")
    return ""


def _cache_refused(seen: Seen) -> str:
    """What the real API says of a request's cache breakpoints, or "" when it accepts them."""
    lifetimes = [ttl for _, ttl in seen.cache_segments() if ttl]
    if len(lifetimes) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {len(lifetimes)}."
    if any(ttl not in ("5m", "1h") for ttl in lifetimes):
        return "cache_control.ttl: Input should be '5m' or '1h'"
    if "1h" in lifetimes[lifetimes.index("5m") + 1:] if "5m" in lifetimes else False:
        return "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
    return ""


def _error(status: int, message: str) -> dict:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def task_of(seen: Seen) -> str:
    """Which proposer request this is: starting kernel, ideas, kernel or repair."""
    text = seen.user_text
    for task in ("starting kernel", "ideas", "kernel", "repair"):
        if f"TASK: {task}." in text:
            return task
    return "unknown"


def python_reply(source: str, note: str = "This kernel does the work in C.") -> str:
    return f"Here is the module.\n\n```python\n{source}```\n\n{note}"


def ideas_reply(count: int, prefix: str = "Idea") -> str:
    items = [{"title": f"{prefix} {i + 1}", "description": f"Try variation {i + 1}."} for i in range(count)]
    return "```json\n" + json.dumps(items) + "\n```"


def ideas_call(count: int, briefs: int = 1, prefix: str = "Idea") -> dict:
    """A propose_ideas tool input: `count` ideas, each with `briefs` distinct briefs."""
    return {"ideas": [{"title": f"{prefix} {i + 1}", "description": f"Try variation {i + 1}.",
                       "briefs": [f"brief {i + 1}.{b + 1}: block size {64 << b}" for b in range(briefs)]}
                      for i in range(count)]}


def kernel_call(source: str, note: str = "A kernel of its own.", analysis: dict | None = None) -> dict:
    """A submit_kernel tool input; `analysis` as the model's own (bottleneck, plan, expected_speedup)."""
    return {"source": source, "note": note, **({"analysis": analysis} if analysis is not None else {})}


def asked_counts(seen: Seen) -> tuple[int, int]:
    """(ideas, briefs per idea) an ideas request asks for."""
    ideas = int(re.search(r"Propose (\d+) distinct", seen.user_text).group(1))
    briefs = re.search(r"give exactly (\d+) implementation briefs", seen.user_text)
    return ideas, int(briefs.group(1)) if briefs else 1
