"""Browser tests drive Debian's chromium against the real app, started the way the README
starts it: a fresh SQLite file, `migrate`, `bootstrap`, then every process of the Procfile
(web, task queue, evaluator) as its own process group, torn down at the end.

Playwright's sync API is used directly (not pytest-playwright's fixtures, which look for
browsers that Playwright downloads itself). Keep these tests synchronous: the sync API
refuses to run inside a running asyncio loop.
"""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import chromium_path, service_missing

ROOT = Path(__file__).resolve().parents[2]
PROCFILE = ROOT / "Procfile"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_TIMEOUT_S = 90


def procfile_commands(path: Path = PROCFILE) -> dict[str, str]:
    commands = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, command = line.partition(":")
        commands[name.strip()] = command.strip()
    return commands


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def children_of() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> list[int]:
    tree, found, todo = children_of(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@dataclass
class Stack:
    url: str
    username: str
    password: str
    data_dir: Path
    env: dict
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def log(self, name: str, tail: int = 4000) -> str:
        path = self.data_dir / "logs" / f"{name}.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(f"--- {name} ---\n{self.log(name)}" for name in self.processes)

    def manage(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True,
            timeout=timeout,
        )

    def start(self, name: str, command: str) -> None:
        log = open(self.data_dir / "logs" / f"{name}.log", "wb")
        # Its own session (and process group), so teardown reaches the process's children.
        self.processes[name] = subprocess.Popen(
            ["/bin/sh", "-c", command], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"`{name}` exited with status {process.returncode}:\n{self.logs()}")
            try:
                with urllib.request.urlopen(f"{self.url}/login/", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"the web process did not answer within {START_TIMEOUT_S}s:\n{self.logs()}")

    def stop(self) -> None:
        family = {name: [p.pid, *descendants(p.pid)] for name, p in self.processes.items()}
        for process in self.processes.values():
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        # Whatever is left (the group, or children that moved to groups of their own) is killed.
        for name, process in self.processes.items():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            for pid in family[name]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.wait(timeout=10)


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("kernellab-e2e")
    (data_dir / "logs").mkdir()
    port = free_port()
    # No DEBUG either: the stack runs with the default a deployment gets.
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "Q_SYNC", "PORT", "DEBUG"}}
    env.update({
        "KERNELLAB_DATA_DIR": str(data_dir),
        "SQLITE_PATH": str(data_dir / "kernellab.sqlite3"),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "SITE_URL": f"http://127.0.0.1:{port}",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "kernellab.settings",
        "RUNNER_DEVICE": "cpu",
        "KERNELLAB_BASELINE_COMPILE": "1",  # pages show the torch.compile baseline, as a deployment's do
    })
    password = secrets.token_urlsafe(16)
    running = Stack(url=f"http://127.0.0.1:{port}", username="e2e", password=password, data_dir=data_dir, env=env)

    for args in (("migrate", "--noinput"), ("bootstrap", "--username", "e2e", f"--password={password}", "--no-catalog")):
        done = running.manage(*args)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args[:1])} failed:\n{done.stdout}\n{done.stderr}")
    try:
        for name, command in procfile_commands().items():
            running.start(name, command.replace("$PORT", str(port)))
        running.wait_until_up()
        yield running
    finally:
        running.stop()


# Per package, not per session: Playwright's sync API keeps an event loop running in the thread while
# it is started, and Django refuses database calls there, so a database test the same process runs
# after the browser tests would fail at setup.
@pytest.fixture(scope="package")
def chromium():
    path = chromium_path()
    if not path:
        service_missing("Chromium", "install Debian's chromium package (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
    yield browser
    browser.close()
    playwright.stop()


@pytest.fixture
def page(require_chromium, chromium, stack):
    context = chromium.new_context(base_url=stack.url)
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def logged_in_page(page, stack):
    page.goto("/login/")
    page.get_by_label("Username").fill(stack.username)
    page.get_by_label("Password").fill(stack.password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/problems/")
    return page
