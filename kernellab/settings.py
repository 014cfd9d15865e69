"""KernelLab settings: one module, every knob read from the environment.

Embedded defaults (SQLite, django-q2's ORM broker, in-process live updates) need no
server. DATABASE_URL switches to PostgreSQL, REDIS_URL to Redis for the task broker and
the channel layer. KERNELLAB_PRODUCTION=1 turns on production checks.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name, default=""):
    return os.environ.get(name, default)


def env_bool(name, default=False):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def env_float(name, default):
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else default


PRODUCTION = env_bool("KERNELLAB_PRODUCTION")
# Off unless a developer asks for it (DEBUG=1): its error pages list every URL pattern to anyone.
DEBUG = env_bool("DEBUG")

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Production mode (KERNELLAB_PRODUCTION=1) needs a long random "
            "SECRET_KEY in the environment, e.g. python -c 'import secrets; print(secrets.token_urlsafe(64))'."
        )
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production-kernellab-0123456789"

ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "" if PRODUCTION else "*").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in env_str("CSRF_TRUSTED_ORIGINS").split(",") if o]
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")
# The public address share links are written with (behind a proxy the request's host is an
# internal one); empty: the host the request came to.
KERNELLAB_BASE_URL = env_str("KERNELLAB_BASE_URL").rstrip("/")
DATA_DIR = Path(env_str("KERNELLAB_DATA_DIR", str(BASE_DIR / "var")))
DATA_DIR.mkdir(parents=True, exist_ok=True)
# This installation's own key, made by scripts/start on its first start (0600, in the data folder) and
# read here by every process, so none holds it in its environment (runner.host.isolation.held_secrets).
SECRET_KEY_FILE = DATA_DIR / "secret_key"
if not env_str("SECRET_KEY") and SECRET_KEY_FILE.is_file():
    SECRET_KEY = SECRET_KEY_FILE.read_text().strip() or SECRET_KEY

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_q",
    "searches",
    "live",
    "evaluation",
    "runs",
    "memory",
    "benches",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "lib.security.ContentSecurityPolicyMiddleware",
    "lib.security.RejectNulMiddleware",
    "lib.storage.StorageFaultMiddleware",  # a write refused by the storage: 503 naming the error, not a 500
]

ROOT_URLCONF = "kernellab.urls"
WSGI_APPLICATION = "kernellab.wsgi.application"
ASGI_APPLICATION = "kernellab.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "searches.context_processors.health",  # the banner: storage faults, silent evaluators
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")


def sqlite_database(path: str) -> dict:
    """Every SQLite database, however it is named (SQLITE_PATH or DATABASE_URL=sqlite:///...),
    gets the options that let web, task and evaluation processes share it."""
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            # Writers take the lock at BEGIN, so concurrent web/worker writes queue
            # on the busy timeout instead of failing with "database is locked".
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        # A file, not SQLite's shared-cache memory database: tests with threads and processes get
        # WAL and the busy timeout, not "database table is locked" errors.
        "TEST": {"NAME": env_str("SQLITE_TEST_PATH") or str(DATA_DIR / f"test-{os.getpid()}.sqlite3")},
    }


if DATABASE_URL:
    import dj_database_url

    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        DATABASES = {"default": sqlite_database(DATABASES["default"]["NAME"])}
else:
    DATABASES = {"default": sqlite_database(env_str("SQLITE_PATH", str(DATA_DIR / "kernellab.sqlite3")))}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- task queue and live updates ------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
Q_CLUSTER = {
    "name": "kernellab",
    "workers": env_int("Q_WORKERS", 2),
    "timeout": env_int("Q_TIMEOUT", 1800),
    "retry": env_int("Q_RETRY", 1900),  # must exceed timeout
    "max_attempts": 3,
    "catch_up": False,
    "save_limit": 500,
    "poll": 0.2,
    "label": "Task queue",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 times reads out after 5 s by default, shorter than channels_redis's blocking
            # receive: consumers died under a crowd ("Timeout reading from ..."); the server side bounds it.
            # Its pools also stop at 100 connections, which a crowd connecting at once (a group_add each) passes.
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None, "max_connections": 1000}]},
        }
    }
    # Shared by every web process: rate-limit counters (lib/ratelimit.py) hold across them.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": "kernellab"}}
else:
    Q_CLUSTER["orm"] = "default"
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# Sync mode runs tasks inline; tests switch it on where that exercises the same code.
Q_CLUSTER["sync"] = env_bool("Q_SYNC")

# How a web process learns of events written by other processes: "poll" tails the
# SearchEvent table (embedded mode), "redis" receives them through the channel layer.
LIVE_UPDATES = env_str("LIVE_UPDATES", "redis" if REDIS_URL else "poll")
LIVE_POLL_SECONDS = env_float("LIVE_POLL_SECONDS", 0.2)

# --- search engine --------------------------------------------------------------------
# The API key is read from the environment where it is used and never stored.
ANTHROPIC_MODEL = env_str("ANTHROPIC_MODEL", "claude-sonnet-4-6")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL")  # tests point this at a local fake
ANTHROPIC_TIMEOUT = env_float("ANTHROPIC_TIMEOUT", 300)
# The prompt cache's lifetime: "5m", or "1h" where a round outlasts five minutes (writes cost 2x input, not 1.25x).
ANTHROPIC_CACHE_TTL = env_str("ANTHROPIC_CACHE_TTL", "5m")
# Proposer calls of one search in flight at once (searches/engine/calls.py).
SEARCH_PARALLEL_CALLS = env_int("SEARCH_PARALLEL_CALLS", 8)
# The API key's calls in flight across every process (searches/engine/gate.py).
ANTHROPIC_KEY_PARALLEL_CALLS = env_int("ANTHROPIC_KEY_PARALLEL_CALLS", 16)

# Evaluation workers.
RUNNER_DEVICE = env_str("RUNNER_DEVICE", "cpu")  # the device this host's evaluator serves
# Jobs one evaluator runs at once: on a GPU the next candidates build while one holds the device.
# Builds need cores, not the device (they run at idle priority, runner/common/compile.py, so they never slow
# the candidate being timed), and a load_inline build keeps one or two cores busy for a minute: a GPU
# host runs one job per core (16 on 16 cores, at most 16); the device lock still lets one at a time
# onto the GPU, and a job waiting for it holds warm sandboxes but no core. Two warm sandboxes per job:
# an evaluation takes the problem's (it makes the truths) and the candidate's.
RUNNER_JOBS_IN_FLIGHT = env_int("RUNNER_JOBS_IN_FLIGHT",
                                max(4, min(16, os.cpu_count() or 4)) if RUNNER_DEVICE == "cuda" else 1)
# Of those, jobs that build nothing long (NVRTC, cupy, Triton, plain C: evaluation/leases.py) ask for the
# device at once, so more of them in flight only queue for it; measured on the H200 (docs/BENCHMARKS.md),
# 16 of them in flight also slowed the one holding it (22.5 candidates/min against 37.6 with 4).
RUNNER_QUICK_JOBS_IN_FLIGHT = env_int("RUNNER_QUICK_JOBS_IN_FLIGHT", min(4, RUNNER_JOBS_IN_FLIGHT))
RUNNER_POOL_SIZE = env_int("RUNNER_POOL_SIZE", 2 * RUNNER_JOBS_IN_FLIGHT)
RUNNER_TIMEOUT = env_float("RUNNER_TIMEOUT", 300)
JOB_LEASE_SECONDS = env_int("JOB_LEASE_SECONDS", 600)
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 3)
# Failures before the sandbox starts the job (database, broker, disk, an evaluator stopped from outside)
# spend none of its attempts; past this many the job fails, naming the last error (evaluation/leases.py).
JOB_MAX_INFRA_ATTEMPTS = env_int("JOB_MAX_INFRA_ATTEMPTS", 10)
# How often an evaluator writes its heartbeat; three missed make its jobs claimable by another evaluator.
WORKER_HEARTBEAT_SECONDS = env_float("WORKER_HEARTBEAT_SECONDS", 10)
ELITE_RECHECKS = env_int("ELITE_RECHECKS", 3)  # fastest kernels rerun when a search completes
PROBLEM_SOURCE_MAX_BYTES = env_int("PROBLEM_SOURCE_MAX_BYTES", 200_000)
KERNEL_SOURCE_MAX_BYTES = env_int("KERNEL_SOURCE_MAX_BYTES", 200_000)
# Work one person may have waiting (evaluation/scheduling.py): evaluation jobs they asked for,
# queued or running (kernels, validations, reruns, a suite's validations and sweeps), and searches
# queued or running (a search's own candidates are the engine's and count as its one search).
MAX_QUEUED_JOBS_PER_USER = env_int("MAX_QUEUED_JOBS_PER_USER", 100)
MAX_ACTIVE_SEARCHES_PER_USER = env_int("MAX_ACTIVE_SEARCHES_PER_USER", 20)
# One suite import (searches/services/suites.py): problem files, and their bytes once uncompressed.
# KernelBench levels 1-3 are 250 files, 0.4 MB.
SUITE_IMPORT_MAX_PROBLEMS = env_int("SUITE_IMPORT_MAX_PROBLEMS", 300)
SUITE_IMPORT_MAX_BYTES = env_int("SUITE_IMPORT_MAX_BYTES", 10 * 1024 * 1024)

# --- auth, static, security -----------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(DATA_DIR / "static")))  # collectstatic's target
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
if PRODUCTION:
    if not ALLOWED_HOSTS:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            "ALLOWED_HOSTS is not set. Production mode (KERNELLAB_PRODUCTION=1) answers only the host names "
            "listed there: set ALLOWED_HOSTS=kernellab.example.com (comma-separated for several)."
        )
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django_q": {"level": env_str("Q_LOG_LEVEL", "WARNING")}},
}

# Without collectstatic (development), WhiteNoise serves straight from static/.
WHITENOISE_USE_FINDERS = not PRODUCTION
# Files served at the site's root, e.g. /favicon.ico (browsers ask for it on every page).
WHITENOISE_ROOT = BASE_DIR / "static" / "root"
