"""How a sandbox process ended, and the bounded copy of what it printed: the parent's reading of
a sandbox's exit status and its stdout/stderr (sandbox.py)."""

from __future__ import annotations

import signal

KEEP_OUTPUT = 8 * 1024


def classify_exit(code: int | None, stderr: str) -> tuple[str, str]:
    if code is None:
        return "crashed", "the sandbox could not be stopped cleanly"
    if code < 0 or code > 128:
        number = -code if code < 0 else code - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGKILL:
            return "oom", "the process was killed (SIGKILL) without a verdict, most likely out of memory"
        if number == signal.SIGSEGV:
            return "crashed", "segmentation fault (SIGSEGV): the kernel touched memory it does not own"
        return "crashed", f"the process died from {name}"
    if "MemoryError" in stderr or "out of memory" in stderr.lower():
        return "oom", "out of memory"
    return "crashed", f"the process exited with status {code} before reporting a verdict (os._exit or sys.exit?)"


class Tail:
    """Keeps the first and last KEEP_OUTPUT bytes of a stream and counts the rest."""

    def __init__(self):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(self.head) < KEEP_OUTPUT:
            take = KEEP_OUTPUT - len(self.head)
            self.head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            self.tail = (self.tail + chunk)[-KEEP_OUTPUT:]

    def text(self) -> str:
        skipped = self.total - len(self.head) - len(self.tail)
        middle = f"\n... ({skipped} bytes not kept) ...\n" if skipped > 0 else ""
        return (bytes(self.head) + middle.encode() + bytes(self.tail)).decode(errors="replace")
