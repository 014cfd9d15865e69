"""A crowd for `manage.py bench_dashboard`: many websocket viewers of one search, or many
concurrent loads of its page, from one process of their own (the `--phase viewers` and
`--phase loads` children), so the load generator never shares the server's CPU budget in-process.

The websocket client is the few lines a listener needs (RFC 6455: an upgrade, then unmasked
server frames), so the benchmark needs no client library beyond the standard library."""

import asyncio
import base64
import json
import os
import struct
import threading
import time
import urllib.request


async def _open(host: str, port: int, path: str, cookie: str):
    reader, writer = await asyncio.open_connection(host, port, limit=2**22)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://{host}:{port}\r\n"
                  f"Cookie: {cookie}\r\n\r\n").encode())
    status = await reader.readline()
    if b" 101 " not in status:
        raise ConnectionError(f"websocket refused: {status.decode(errors='replace').strip()}")
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    return reader, writer


async def _frames(reader):
    """Text payloads of the server's frames, in order (the server does not fragment them)."""
    while True:
        head = await reader.readexactly(2)
        opcode, length = head[0] & 0x0F, head[1] & 0x7F
        if length == 126:
            length = struct.unpack("!H", await reader.readexactly(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", await reader.readexactly(8))[0]
        payload = await reader.readexactly(length)
        if opcode == 0x8:  # close
            return
        if opcode == 0x1:
            yield payload.decode()


async def _viewer(host, port, path, cookie, events: int, ready: list, arrivals: list, opened: asyncio.Event):
    reader, writer = await _open(host, port, path, cookie)
    ready.append(1)
    opened.set()
    got = 0
    try:
        async for text in _frames(reader):
            message = json.loads(text)
            if message.get("kind") == "bench.ping":
                arrivals.append(time.time() - message["payload"]["t"])
                got += 1
                if got >= events:
                    return
    finally:
        writer.close()


async def _crowd(url: str, cookie: str, viewers: int, events: int, timeout: float) -> dict:
    host, _, rest = url.removeprefix("http://").partition(":")
    port, _, path = rest.partition("/")
    path = "/" + path
    ready, arrivals, opened = [], [], asyncio.Event()
    started = time.monotonic()
    tasks = [asyncio.create_task(_viewer(host, int(port), path, cookie, events, ready, arrivals, opened))
             for _ in range(viewers)]
    while len(ready) < viewers and time.monotonic() - started < timeout and not all(t.done() for t in tasks):
        await asyncio.sleep(0.05)
    connect_s = time.monotonic() - started
    print(json.dumps({"ready": len(ready), "connect_s": connect_s}), flush=True)  # the parent starts the writer
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    for task in pending:
        task.cancel()
    failed = sum(1 for t in done if t.exception() is not None)
    return {"viewers": viewers, "connected": len(ready), "connect_s": connect_s, "failed": failed,
            "unfinished": len(pending), "latencies_s": arrivals}


def viewers(url: str, cookie: str, count: int, events: int, timeout: float = 120) -> dict:
    """`count` websocket viewers of `url` (ws path), each until it heard `events` bench pings."""
    return asyncio.run(_crowd(url, cookie, count, events, timeout))


def page_loads(url: str, cookie: str, count: int, timeout: float = 120) -> dict:
    """`count` loads of `url` started at once (threads: each waits on its socket); seconds each took."""
    times, errors, start = [], [], threading.Barrier(count)

    def load():
        request = urllib.request.Request(url, headers={"Cookie": cookie, "Accept-Encoding": "gzip"})
        start.wait()
        began = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                size = len(response.read())
            times.append((time.monotonic() - began, size))
        except Exception as exc:  # counted and shown: a crowd may time out or be refused
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=load) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"loads": count, "seconds": [t for t, _ in times], "bytes": max((s for _, s in times), default=0),
            "errors": errors[:5], "failed": len(errors)}

