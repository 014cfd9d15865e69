"""Eager and torch.compile baselines cached on disk, per problem, environment and runner
version, in the project's data folder.

Written only by the parent process: the data folder is never mounted in a sandbox, so a
candidate can neither read nor poison it. Each entry repeats its own key and is checked
against the validation schema on read; anything else is ignored (and re-measured).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from ..common.baselinekinds import MORE_BASELINES
from ..common.version import RUNNER_VERSION
from . import schema

ENV_KEYS = ("device_name", "torch", "cuda", "driver", "python", "threads")
# Baselines a caller may ask for beside eager and torch.compile's default (built by morebaselines.py):
# torch.compile's other modes and the eager model as CUDA graphs; those that need CUDA are skipped
# elsewhere, with the reason.
EXTRA = MORE_BASELINES


def extra(asked) -> tuple[str, ...]:
    """The extra baselines asked for, known ones only, in EXTRA's order."""
    asked = set(asked or ())
    unknown = asked - set(EXTRA)
    if unknown:
        from ..common.errors import RunnerError

        raise RunnerError(f"baselines must be among {', '.join(EXTRA)}, not {', '.join(sorted(unknown))}")
    return tuple(k for k in EXTRA if k in asked)


def cache_dir() -> Path:
    """baselines/ under the parent's cache root (KERNELLAB_CACHE_DIR, else the data folder:
    KERNELLAB_DATA_DIR, default var/ beside the runner, as the app's)."""
    from .sandbox import cache_root

    return cache_root() / "baselines"


def key(problem_source: str, device: str, environment: dict, compile_baseline: bool, more: tuple = ()) -> str:
    parts = [problem_source, device, RUNNER_VERSION, str(compile_baseline)] + ([",".join(more)] if more else [])
    parts += [str(environment.get(k)) for k in ENV_KEYS]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def load(cache_key: str) -> dict | None:
    path = cache_dir() / f"{cache_key}.json"
    try:
        entry = json.loads(path.read_text())
        if entry.get("key") != cache_key or entry.get("runner_version") != RUNNER_VERSION:
            return None
        validation = entry["validation"]
        measured = ("environment", "schema", "measurements", "noisy")  # the parent's own, not the sandbox's
        checked = schema.validation({k: v for k, v in validation.items() if k not in measured})
    except (OSError, ValueError, KeyError, TypeError, AttributeError, schema.Malformed):
        return None
    if checked["status"] != "ok":
        return None
    return {**validation, **checked}


def store(cache_key: str, validation: dict) -> None:
    folder = cache_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(handle, "w") as out:
        json.dump({"key": cache_key, "runner_version": RUNNER_VERSION, "validation": validation}, out)
    os.replace(temp, folder / f"{cache_key}.json")
