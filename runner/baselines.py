"""Eager and torch.compile baselines cached on disk, per problem and environment.

Written only by the parent process (never by a sandbox), so a candidate cannot poison it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .version import RUNNER_VERSION

ENV_KEYS = ("device_name", "torch", "cuda", "driver", "python", "threads")


def cache_dir() -> Path:
    configured = os.environ.get("KERNELLAB_CACHE_DIR")
    base = Path(configured) if configured else Path.home() / ".cache" / "kernellab"
    return base / "baselines"


def key(problem_source: str, device: str, environment: dict, compile_baseline: bool) -> str:
    parts = [problem_source, device, RUNNER_VERSION, str(compile_baseline)]
    parts += [str(environment.get(k)) for k in ENV_KEYS]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def load(cache_key: str) -> dict | None:
    path = cache_dir() / f"{cache_key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def store(cache_key: str, validation: dict) -> None:
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(handle, "w") as out:
        json.dump(validation, out)
    os.replace(temp, folder / f"{cache_key}.json")
