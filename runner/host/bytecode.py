"""Bytecode for what a sandbox imports, written from the parent. A sandbox cannot write any
(PYTHONDONTWRITEBYTECODE, its packages read-only), so every module it imports without a .pyc
beside the source is compiled again at each sandbox's start: the runner's own modules, and on a
host whose Python libraries were installed without bytecode (pip --no-compile, uv's default),
whatever torch's profiler pulls in on a GPU (Inductor, Dynamo, sympy: ~900 modules, 4-5 s of
CPU in every evaluation). Trusted code only: the runner and its libraries, before any candidate's.

    python -m runner.host.bytecode cpu|cuda   (the parent's step: imports, then a JSON report)
"""

from __future__ import annotations

import compileall
import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

# What a sandbox's warm-up and jobs import, as the child does (runner/inside/child.py)
IMPORTS = ["runner.inside.jobs", "runner.inside.truths", "runner.inside.validation", "torch.utils.cpp_extension"]
CUDA_IMPORTS = ["cupy", "triton", "torch.profiler", "torch._inductor"]  # the profiler's first start imports Inductor
_lock = threading.Lock()
_reports: dict[tuple, dict | None] = {}


@functools.cache
def compile_runner() -> None:
    """The runner's bytecode, written once per process."""
    if not sys.dont_write_bytecode:
        compileall.compile_dir(str(Path(__file__).resolve().parents[1]), quiet=2)


def libraries(device: str, folder: Path, extra: tuple[str, ...] = ()) -> dict | None:
    """Bytecode for the library modules a `device` sandbox imports, where the library's folder lets
    the parent write it; once per Python, torch and device, with a stamp in `folder` holding the
    report. KERNELLAB_LIBRARY_BYTECODE=0 leaves the libraries as they are. Returns the report."""
    if os.environ.get("KERNELLAB_LIBRARY_BYTECODE", "1") == "0":
        return None
    with _lock:  # once per process: the libraries are the same whichever cache folder holds the stamp
        key = (device, tuple(extra))
        if key not in _reports:
            _reports[key] = _libraries(device, folder, key[1])
        return _reports[key]


def _libraries(device: str, folder: Path, extra: tuple[str, ...]) -> dict | None:
    stamp = _stamp(device, folder, extra)
    try:
        report = json.loads(stamp.read_text())
    except (OSError, ValueError):
        report = _run(device, extra)
        if report is None:
            return None
        try:
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(json.dumps(report))
        except OSError:  # no stamp: the next process asks again
            pass
        if report["written"]:
            log.info("wrote bytecode for %d library modules a %s sandbox imports (it compiled them from source "
                     "at every start), in %.1f s", report["written"], device, report["seconds"])
    if report["unwritable"]:
        folders = sorted({os.path.dirname(p) for p in report["unwritable"]})
        log.warning("%d library modules a %s sandbox imports have no bytecode, and their folders cannot take it "
                    "(%s): every sandbox compiles them from source at its start; compile them once as their owner "
                    "(python -m compileall DIR)", len(report["unwritable"]), device, ", ".join(folders[:3]))
    return report


def _stamp(device: str, folder: Path, extra: tuple[str, ...]) -> Path:
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = ""
    key = hashlib.sha256("\0".join([sys.executable, sys.version, torch_version, device, *extra]).encode())
    return folder / "bytecode" / f"{key.hexdigest()[:16]}.json"


def _run(device: str, extra: tuple[str, ...]) -> dict | None:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    try:
        done = subprocess.run([sys.executable, "-s", "-m", "runner.host.bytecode", device, *extra], env=env,
                              capture_output=True, text=True, timeout=600)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        log.warning("could not write the sandboxes' library bytecode: %s", str(exc)[:300])
        return None


def report(device: str, extra: list[str]) -> dict:
    """Imports what a sandbox imports, Python writing each missing .pyc where it can; then which
    modules have one now that had none (written) and which still have none (unwritable)."""
    sys.dont_write_bytecode = False  # whatever PYTHONDONTWRITEBYTECODE says: writing it is this step's purpose
    started = time.time()
    names = IMPORTS + (CUDA_IMPORTS if device == "cuda" else []) + extra
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a missing optional library (cupy, triton) has nothing to compile
            pass
    runner = str(Path(__file__).resolve().parents[1])  # compile_runner's
    written, unwritable = [], []
    for module in list(sys.modules.values()):
        spec = getattr(module, "__spec__", None)
        cached = getattr(spec, "cached", None)  # None for built-in, frozen and extension modules
        if not cached or not str(spec.origin).endswith(".py") or spec.origin.startswith(runner):
            continue
        try:
            if os.stat(cached).st_mtime >= started:
                written.append(spec.origin)
        except OSError:
            unwritable.append(spec.origin)
    return {"written": len(written), "unwritable": unwritable, "seconds": round(time.time() - started, 2)}


if __name__ == "__main__":
    print(json.dumps(report(sys.argv[1], sys.argv[2:])))
