"""`scripts/start`, as the README runs it, in a temp data folder with a fake Anthropic key (a
canary) and a local fake Messages API: after a search with the Anthropic proposer, started from
the web page, the key is in the environment of the task queue's processes only, and in no
database row, log or stored prompt. Then kill -9 of the task queue leaves one cluster (no
orphaned workers), and kill -9 of the evaluator restarts it under the same name, while the other
processes keep running."""

import os
import re
import signal
import socket
import sqlite3
import stat as stats
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

import playbook as book
from tests.fakes.anthropic_server import FakeAnthropic, ideas_reply, python_reply, task_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
CANARY = "sk-ant-canary-start-7f3c9d1e5b"
PROBLEM_KEY = "softmax-cpu"


class Browser:
    """Cookies and CSRF like a browser; redirects are answered, not followed."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    def __init__(self, url: str):
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()), self._NoRedirect)

    def request(self, path: str, data: dict | None = None) -> tuple[int, str]:
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        headers = {"Referer": self.url + path}
        try:
            with self.opener.open(urllib.request.Request(self.url + path, data=body, headers=headers),
                                  timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def post_form(self, path: str, fields: dict) -> tuple[int, str]:
        _, page = self.request(path)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        return self.request(path, {"csrfmiddlewaretoken": token, **fields})


def stack_env(data: Path, port: int, **extra) -> dict:
    """The environment of a start on embedded defaults: this machine's, less any deployment's settings."""
    env = {k: v for k, v in os.environ.items() if k not in {
        "DATABASE_URL", "REDIS_URL", "SQLITE_PATH", "Q_SYNC", "DEBUG", "ANTHROPIC_API_KEY", "SECRET_KEY"}}
    env.update(KERNELLAB_DATA_DIR=str(data), PORT=str(port), HOST="127.0.0.1", RUNNER_DEVICE="cpu", Q_WORKERS="1",
               RUNNER_POOL_SIZE="0", DJANGO_SETTINGS_MODULE="kernellab.settings", **extra)
    return env


def login_page_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/login/", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def processes(marker: bytes = b"") -> dict[int, dict]:
    """Every readable process (with `marker` in its environment): parent, command line, environment.
    The marker picks this test's stack out of others running on the machine, orphans included."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if stat[0] == "Z":
                continue
            environ = (entry / "environ").read_bytes()
            if marker not in environ:
                continue
            found[int(entry.name)] = {"ppid": int(stat[1]),
                                      "cmdline": (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(),
                                      "environ": environ}
        except OSError:
            continue
    return found


def cluster_roots(procs) -> list[int]:
    """qcluster processes whose parent is not one: one per running cluster (orphans included)."""
    def is_cluster(pid):
        return "manage.py qcluster" in procs.get(pid, {}).get("cmdline", "") and "respawn" not in procs[pid]["cmdline"]
    return [pid for pid in procs if is_cluster(pid) and not is_cluster(procs[pid]["ppid"])]


def child_running(procs, parent_marker: str, command: str) -> int | None:
    for pid, proc in procs.items():
        parent = procs.get(proc["ppid"], {}).get("cmdline", "")
        if command in proc["cmdline"] and "respawn" not in proc["cmdline"] and "respawn" in parent \
                and parent_marker in parent:
            return pid
    return None


def wait_for(predicate, *, timeout, what, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text(errors='replace')[-6000:]}")


def query(db: Path, sql: str, params=()):
    with sqlite3.connect(db, timeout=30) as connection:
        return connection.execute(sql, params).fetchall()


def responder(seen):
    from searches import catalog  # noqa: PLC0415  (Django is set up by the test session)

    task = task_of(seen)
    if task == "ideas":
        return ideas_reply(int(re.search(r"Propose (\d+) distinct", seen.user_text).group(1)))
    entry = catalog.get(PROBLEM_KEY)
    return python_reply(book.render(entry.source, entry.family, entry.device,
                                    book.recipes(entry.family, entry.device)[0], 0))


def test_start_keeps_the_key_in_the_task_queue_and_restarts_what_dies(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    log = tmp_path / "start.log"
    db = data / "kernellab.sqlite3"
    port = free_port()
    ours = f"KERNELLAB_DATA_DIR={data}".encode()
    with FakeAnthropic(responder=responder) as fake:
        env = stack_env(data, port, ANTHROPIC_API_KEY=CANARY, ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_TIMEOUT="10")
        with open(log, "wb") as out:
            start = subprocess.Popen(["scripts/start"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"

            def up():
                assert start.poll() is None, log.read_text(errors="replace")[-6000:]
                return login_page_answers(url)

            wait_for(up, timeout=180, what="the web server", log=log)
            password = re.search(r"Log in as admin with password (\S+)", log.read_text()).group(1)
            wait_for(lambda: query(db, "select 1 from searches_taskqueueheartbeat where anthropic_key"), timeout=90,
                     what="the task queue's heartbeat", log=log)
            [(code,)] = query(db, "select code from searches_problem where catalog_key=?", (PROBLEM_KEY,))
            wait_for(lambda: query(db, "select 1 from searches_problem where catalog_key=? and validation_status='ok'",
                                   (PROBLEM_KEY,)), timeout=400, what="the problem's validation", log=log)

            # A search with the Anthropic proposer, from the web page, by a web server without the key.
            web = Browser(url)
            assert web.post_form("/login/", {"username": "admin", "password": password})[0] == 302
            path = f"/problems/{_uuid(code)}/search/new/"
            assert 'value="anthropic"' in web.request(path)[1]
            status, page = web.post_form(path, {
                "name": "canary", "proposer": "anthropic", "device": "cpu", "rounds": 1, "parents_per_round": 1,
                "ideas_per_parent": 1, "kernels_per_idea": 1, "bank_size": 0, "max_candidates": 3})
            assert status == 302, page[-3000:]
            wait_for(lambda: query(db, "select 1 from searches_search where name='canary' and status in "
                                       "('completed', 'failed')"), timeout=300, what="the search", log=log)
            sent = {seen.headers.get("x-api-key") or seen.headers.get("authorization", "").removeprefix("Bearer ")
                    for seen in fake.requests}
            assert sent == {CANARY}  # the task queue called the API with the key
            prompts = query(db, "select prompt from searches_proposercall")
            assert prompts and all(CANARY not in prompt for (prompt,) in prompts)

            # The key: only in the task queue's processes.
            holders = {pid: proc["cmdline"] for pid, proc in processes().items() if CANARY.encode() in proc["environ"]}
            assert holders and all("manage.py qcluster" in cmd and "respawn" not in cmd
                                   for cmd in holders.values()), holders
            procs = processes(ours)
            holders = {pid: proc["cmdline"] for pid, proc in procs.items() if CANARY.encode() in proc["environ"]}
            assert holders and all("manage.py qcluster" in cmd and "respawn" not in cmd
                                   for cmd in holders.values()), holders
            for name in ("daphne", "manage.py evaluator"):
                assert any(name in proc["cmdline"] for proc in procs.values()), name

            # kill -9 of the task queue: restarted, one cluster, the old workers gone.
            old = set(cluster_roots(procs))
            old_family = {pid for pid, proc in procs.items() if "manage.py qcluster" in proc["cmdline"]
                          and "respawn" not in proc["cmdline"]}
            assert len(old) == 1
            os.kill(old.pop(), signal.SIGKILL)

            def one_new_cluster():
                now = processes(ours)
                roots = cluster_roots(now)
                alive_old = old_family & set(now)
                return len(roots) == 1 and not alive_old and child_running(now, "qcluster", "manage.py qcluster")

            wait_for(one_new_cluster, timeout=60, what="one restarted cluster", log=log)
            time.sleep(3)  # a late orphan would show up here
            assert len(cluster_roots(processes(ours))) == 1

            # kill -9 of the evaluator: restarted under the same name; the web server kept running.
            evaluator = child_running(processes(ours), "evaluator", "manage.py evaluator")
            assert evaluator
            os.kill(evaluator, signal.SIGKILL)
            name = f"{socket.gethostname()}-cpu"
            wait_for(lambda: query(db, "select pid from searches_worker where name=? and pid not in (?)",
                                   (name, evaluator)), timeout=60, what="the restarted evaluator", log=log)
            assert start.poll() is None and login_page_answers(url)
        finally:
            stop(start, ours)

    query(db, "pragma wal_checkpoint(TRUNCATE)")
    for path in [*data.rglob("*"), log]:
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
    assert not list(Path(os.environ.get("XDG_RUNTIME_DIR", "/tmp")).glob("kernellab-task-secrets.*"))


def test_the_first_start_makes_a_private_secret_key_and_a_second_start_keeps_it(tmp_path):
    """The settings' built-in key is public. The first start makes this installation's own (0600, in the
    data folder, in no process's environment: the settings read it); a second start keeps it, so a
    login outlives the restart (Django signs the session with the key)."""
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ours = f"KERNELLAB_DATA_DIR={data}".encode()
    env = stack_env(data, port)
    key_file, web = data / "secret_key", Browser(url)
    for run in (1, 2):
        log = tmp_path / f"start-{run}.log"
        with open(log, "wb") as out:
            start = subprocess.Popen(["scripts/start"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            def up():
                assert start.poll() is None, log.read_text(errors="replace")[-6000:]
                return login_page_answers(url)

            wait_for(up, timeout=180, what="the web server", log=log)
            if run == 1:
                key = key_file.read_text().strip()
                assert stats.S_IMODE(key_file.stat().st_mode) == 0o600
                assert len(key) >= 64 and key != DEV_KEY
                password = re.search(r"Log in as admin with password (\S+)", log.read_text()).group(1)
                assert web.post_form("/login/", {"username": "admin", "password": password})[0] == 302
                [(session,)] = query(data / "kernellab.sqlite3", "select session_data from django_session")
                assert signed_with(session, key) and not signed_with(session, DEV_KEY)  # the server signs with it
            stack = processes(ours)
            assert any("daphne" in proc["cmdline"] for proc in stack.values())
            assert not [pid for pid, proc in stack.items() if b"SECRET_KEY=" in proc["environ"]]
            assert web.request("/problems/")[0] == 200  # still logged in: the session's signature holds
        finally:
            stop(start, ours)
    assert key_file.read_text().strip() == key


def test_one_instance_per_data_folder_and_nothing_outlives_a_killed_supervisor(tmp_path):
    """A second start beside a running one refuses, saying how to stop the first (as does one on a taken
    port); kill -9 of the supervisor (honcho) takes every process of its stack with it, so the next start
    comes up alone instead of crash-looping beside orphans."""
    data, other = tmp_path / "data", tmp_path / "other"
    data.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ours = f"KERNELLAB_DATA_DIR={data}".encode()
    env = stack_env(data, port)

    def launch(name, **extra):
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as out:
            return subprocess.Popen(["scripts/start"], cwd=ROOT, env={**env, **extra}, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True), log

    first, log = launch("first")
    try:
        def up():
            assert first.poll() is None, log.read_text(errors="replace")[-6000:]
            return login_page_answers(url)

        wait_for(up, timeout=180, what="the web server", log=log)
        second, second_log = launch("second")
        assert second.wait(timeout=120) == 1
        assert f"KernelLab is already running from {data} (supervisor pid {first.pid})" in second_log.read_text()
        elsewhere, elsewhere_log = launch("elsewhere", KERNELLAB_DATA_DIR=str(other))
        assert elsewhere.wait(timeout=120) == 1
        assert f"Port {port} on 127.0.0.1 is taken" in elsewhere_log.read_text()
        assert login_page_answers(url)

        stack = processes(ours)
        assert any("daphne" in proc["cmdline"] for proc in stack.values())
        os.kill(first.pid, signal.SIGKILL)  # exec'd: scripts/start's pid is honcho's
        first.wait(timeout=10)
        wait_for(lambda: not processes(ours), timeout=60, what="the killed supervisor's processes to stop", log=log)
    finally:
        stop(first, ours)

    third, third_log = launch("third")
    try:
        def alone_and_up():
            assert third.poll() is None, third_log.read_text(errors="replace")[-6000:]
            return login_page_answers(url)

        wait_for(alone_and_up, timeout=180, what="the next start", log=third_log)
    finally:
        stop(third, ours)


DEV_KEY = re.search(r'SECRET_KEY = "(dev-only[^"]+)"', (ROOT / "kernellab" / "settings.py").read_text()).group(1)


def signed_with(session_data: str, key: str) -> bool:
    from django.contrib.sessions.serializers import JSONSerializer  # noqa: PLC0415  (Django set up by the session)
    from django.core import signing  # noqa: PLC0415

    try:
        signing.loads(session_data, key=key, salt="django.contrib.sessions.SessionStore", serializer=JSONSerializer)
        return True
    except signing.BadSignature:
        return False


def stop(start: subprocess.Popen, marker: bytes) -> None:
    try:
        os.killpg(start.pid, signal.SIGTERM)
        start.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    for pid in processes(marker):  # whatever of this stack is left
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _uuid(code: str) -> str:
    """Django stores UUIDs in SQLite as 32 hex digits; URLs carry the dashed form."""
    import uuid

    return str(uuid.UUID(code))
