"""Settings as a deployment sees them, each in a fresh process: production checks and the
embedded SQLite defaults."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def manage(tmp_path, *args, **env):
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG"}}
    clean.update({"KERNELLAB_DATA_DIR": str(tmp_path), "SQLITE_PATH": str(tmp_path / "db.sqlite3"), **env})
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def production(**extra):
    return {"KERNELLAB_PRODUCTION": "1", "SECRET_KEY": secrets.token_urlsafe(64),
            "ALLOWED_HOSTS": "kernellab.example.com", **extra}


@pytest.mark.slow
def test_check_deploy_in_production_reports_nothing(tmp_path):
    done = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **production())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


@pytest.mark.slow
def test_check_deploy_notices_a_weak_secret_key(tmp_path):
    # The same check catches real problems: a short key is reported at warning level.
    done = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **production(SECRET_KEY="short"))
    assert done.returncode != 0
    assert "security.W009" in done.stderr + done.stdout


@pytest.mark.parametrize(
    "missing, message",
    [("SECRET_KEY", "SECRET_KEY is not set"), ("ALLOWED_HOSTS", "ALLOWED_HOSTS is not set")],
)
def test_production_refuses_to_start_without(tmp_path, missing, message):
    env = production()
    del env[missing]
    done = manage(tmp_path, "check", **env)
    assert done.returncode != 0
    assert message in done.stderr


def test_production_turns_debug_off_and_cookies_secure(tmp_path):
    code = (
        "from django.conf import settings as s; "
        "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS > 0)"
    )
    done = manage(tmp_path, "shell", "--no-imports", "-c", code, **production())
    assert done.stdout.split() == ["False", "True", "True", "True", "True"], done.stderr


SQLITE_OPTIONS = (
    "from django.db import connection; c = connection.cursor(); "
    "print(c.execute('PRAGMA journal_mode').fetchone()[0], c.execute('PRAGMA busy_timeout').fetchone()[0], "
    "connection.transaction_mode, connection.settings_dict['NAME'])"
)


def test_embedded_sqlite_uses_wal_a_busy_timeout_and_immediate_transactions(tmp_path):
    done = manage(tmp_path, "shell", "--no-imports", "-c", SQLITE_OPTIONS)
    assert done.stdout.split() == ["wal", "30000", "IMMEDIATE", str(tmp_path / "db.sqlite3")], done.stderr
    assert (tmp_path / "db.sqlite3").exists()


@pytest.mark.parametrize("value, expected", [(None, "False"), ("1", "True"), ("0", "False")])
def test_debug_is_off_unless_asked_for(tmp_path, value, expected):
    env = {} if value is None else {"DEBUG": value}
    code = "from django.conf import settings; print(settings.DEBUG)"
    done = manage(tmp_path, "shell", "--no-imports", "-c", code, **env)
    assert done.stdout.split() == [expected], done.stderr


def test_a_sqlite_database_url_gets_the_same_options(tmp_path):
    # DATABASE_URL=sqlite:///... used to drop them: the orchestrator then died on "database is locked".
    path = tmp_path / "from-url.sqlite3"
    done = manage(tmp_path, "shell", "--no-imports", "-c", SQLITE_OPTIONS, DATABASE_URL=f"sqlite:///{path}")
    assert done.stdout.split() == ["wal", "30000", "IMMEDIATE", str(path)], done.stderr
    assert path.exists() and not (tmp_path / "db.sqlite3").exists()


def test_the_public_base_url_for_share_links_comes_from_the_environment(tmp_path):
    show = ["shell", "-c", "from django.conf import settings; print(repr(settings.KERNELLAB_BASE_URL))"]
    assert manage(tmp_path, *show, KERNELLAB_BASE_URL="https://kernels.example.org/").stdout.splitlines()[-1] == \
        "'https://kernels.example.org'"
    assert manage(tmp_path, *show, KERNELLAB_BASE_URL="").stdout.splitlines()[-1] == "''"  # unset: links use the request's host
