"""A redis-server of the test's own, on a free port in a temporary folder, that the test can stop
and start again (the machine's shared Redis is never touched)."""

import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.conftest import port_open, service_missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, folder: Path):
        self.binary = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists()
                                                        else None)
        if self.binary is None:
            service_missing("redis-server", "install Debian's redis-server package (apt-get install redis-server)")
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        log = open(self.folder / "redis.log", "ab")
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--save", "", "--appendonly", "no", "--daemonize", "no"], stdout=log, stderr=log)
        end = time.monotonic() + 15
        while not port_open("127.0.0.1", self.port, timeout=0.2):
            if self.process.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"redis-server did not start:\n{(self.folder / 'redis.log').read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill it, as a crash or an operator's restart would; nothing it held survives (no saving)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=15)
        assert not port_open("127.0.0.1", self.port, timeout=0.2)
