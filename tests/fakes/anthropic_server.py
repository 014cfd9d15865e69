"""A local stand-in for Anthropic's Messages API, for tests that drive the real `anthropic` SDK.

It speaks `POST /v1/messages` (JSON in, a `message` object out, with usage counts including
prompt-cache reads and writes) and the API's error shape (`{"type": "error", "error": {...}}`).
Tests queue behaviours (an error status, a delay longer than the client's timeout, a given
reply text); otherwise `responder(request_json)` writes the reply. Every request is kept in
`requests` (headers included) for assertions.
"""

import json
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
    reply: str | None = None  # text of the reply; None: ask the responder
    stop_reason: str = "end_turn"


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


def approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class FakeAnthropic:
    responder: object = None  # callable(Seen) -> str
    script: list = field(default_factory=list)  # Behaviours used first, in order
    requests: list = field(default_factory=list)
    usage_given: dict = field(default_factory=lambda: {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0})

    def __post_init__(self):
        self._lock = threading.Lock()
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
        if behaviour.delay:
            time.sleep(behaviour.delay)
            handler.close_connection = True
            return  # nothing delivered, nothing billed
        if behaviour.status != 200:
            headers = {"retry-after-ms": "20"} if behaviour.status == 429 else {}
            return self._send(handler, behaviour.status, _error(behaviour.status, "fake failure"), headers)
        text = behaviour.reply if behaviour.reply is not None else self.responder(seen)
        self._send(handler, 200, self._message(seen, text, behaviour.stop_reason))

    def _message(self, seen: Seen, text: str, stop_reason: str) -> dict:
        system = seen.body.get("system") or []
        cached = "".join(b.get("text", "") for b in system if isinstance(b, dict) and b.get("cache_control"))
        uncached = "".join(b.get("text", "") for b in system if isinstance(b, dict) and not b.get("cache_control"))
        with self._lock:
            hit = cached in self._cached
            self._cached.add(cached)
        cache_tokens = approx_tokens(cached) if cached else 0
        usage = {
            "input_tokens": approx_tokens(uncached + seen.user_text),
            "output_tokens": approx_tokens(text),
            "cache_read_input_tokens": cache_tokens if hit else 0,
            "cache_creation_input_tokens": 0 if hit else cache_tokens,
        }
        with self._lock:
            self.usage_given["input"] += usage["input_tokens"]
            self.usage_given["output"] += usage["output_tokens"]
            self.usage_given["cache_read"] += usage["cache_read_input_tokens"]
            self.usage_given["cache_write"] += usage["cache_creation_input_tokens"]
        return {"id": f"msg_fake_{len(self.requests)}", "type": "message", "role": "assistant",
                "model": seen.body.get("model", "fake"), "content": [{"type": "text", "text": text}],
                "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}

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
