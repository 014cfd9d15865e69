"""A real KernelLab stack in subprocesses for the engine's tests: a file SQLite database,
`manage.py qcluster`, `manage.py evaluator`, scripts using the services, all configured
through the environment like a deployment. The test process reads the database with sqlite3.

Validating a problem runs the real runner (torch.compile baseline included) and takes a while,
so one validated database is made per session and copied for each test.
"""

import atexit
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBLEM_KEY = "softmax-cpu"
_snapshot: dict = {}


def env_for(db_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "REDIS_URL", "SQLITE_PATH", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "Q_SYNC"}}
    env.update(DJANGO_SETTINGS_MODULE="kernellab.settings", SQLITE_PATH=str(db_path), PYTHONUNBUFFERED="1",
               Q_WORKERS="1", LOG_LEVEL="WARNING", RUNNER_POOL_SIZE="0")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def manage(db_path: Path, *args, timeout=300, env=None, check=True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env or env_for(db_path),
                            capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def script(db_path: Path, code: str, *, env=None, timeout=120):
    """Run Python with Django set up on this database; return what it printed last, as JSON."""
    prelude = ("import django, json; django.setup()\nfrom searches import services\nfrom searches.models import *\n"
               "from evaluation.models import *\n")
    result = subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, env=env or env_for(db_path),
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-5000:]
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else None


def start(db_path: Path, *args, env=None, log_to: Path | None = None) -> subprocess.Popen:
    """A long-running manage.py command in its own process group (so a kill takes its sandboxes too)."""
    out = open(log_to, "ab") if log_to else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env or env_for(db_path),
                            stdout=out, stderr=out, start_new_session=True)


def kill_hard(process: subprocess.Popen) -> None:
    """kill -9 the process and everything it started (a crashed host loses the sandboxes too)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


def stop(process: subprocess.Popen, timeout=30) -> int:
    """SIGTERM, as honcho or systemd would; kill -9 if it does not stop in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_hard(process)
            return -9
    return process.returncode


def query(db_path: Path, sql: str, params=()) -> list[tuple]:
    connection = sqlite3.connect(db_path, timeout=30)
    try:
        return connection.execute(sql, params).fetchall()
    finally:
        connection.close()


def wait_for(predicate, *, timeout: float, interval: float = 0.3, what: str = "condition", dump=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    detail = ""
    if dump:
        db, log = dump
        detail = "\njobs: " + repr(query(db, "select id, purpose, status, attempts, lease_owner, last_error "
                                            "from searches_evaluationjob"))
        detail += "\nsearches: " + repr(query(db, "select id, status, current_round, stop_reason, engine_lease_until "
                                                "from searches_search"))
        detail += "\nlog:\n" + (log.read_text(errors="replace")[-4000:] if log and log.exists() else "")
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{detail}")


def validated_db(tmp_path: Path) -> tuple[Path, int]:
    """A fresh copy of a migrated database holding the catalog's softmax-cpu problem, validated
    by a real evaluator through the real runner. Returns (path, problem id)."""
    if not _snapshot:
        base = Path(os.environ.get("TMPDIR", "/tmp")) / f"kernellab-engine-snapshot-{os.getpid()}"
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        atexit.register(shutil.rmtree, base, True)
        db = base / "db.sqlite3"
        manage(db, "migrate", "--noinput", "-v", "0")
        problem_id = script(db, (
            "from searches import catalog\n"
            f"e = catalog.get({PROBLEM_KEY!r})\n"
            "p = services.problem_create(user=None, name=e.name, source=e.source, description=e.description,"
            " atol=e.atol, rtol=e.rtol, device=e.device, catalog_key=e.key, family=e.family)\n"
            "print(json.dumps(p.id))\n"))
        # With the torch.compile baseline, as a deployment validates: the LLM tests check the model is told it.
        manage(db, "evaluator", "--once", "--name", "snapshot-validator", timeout=300,
               env=env_for(db, KERNELLAB_BASELINE_COMPILE=1))
        [(status, reason)] = query(db, "select validation_status, validation_reason from searches_problem where id=?",
                                   (problem_id,))
        assert status == "ok", f"the catalog problem did not validate: {reason}"
        query(db, "pragma wal_checkpoint(TRUNCATE)")
        _snapshot.update(path=db, problem_id=problem_id)
    target = tmp_path / "db.sqlite3"
    shutil.copy(_snapshot["path"], target)
    return target, _snapshot["problem_id"]
