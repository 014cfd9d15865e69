"""A shared cache of load_inline builds (torch's JIT extensions), so identical sources build once.

The sandbox never sees the cache, not even read-only: an entry holds the kernel's sources
(main.cpp, cuda.cu), and a view of the whole cache would let any candidate read every other
kernel's code. Instead the parent, as root, works on the sandbox's own build folder
(TORCH_EXTENSIONS_DIR in its private /tmp) through a directory descriptor it opens while the
sandbox is warm and has run only the runner's code:
- before the job is sent, a cached build for the job's key is checked (every file's size and
  sha256 against the entry's manifest) and copied in, mtimes kept, owned by the slot's uid, so
  torch's ninja finds everything up to date and runs no compiler;
- after the sandbox has exited (every process of it gone, its tmpfs kept alive by that
  descriptor alone), a build it made is copied out and published under the key with one rename:
  an entry is never overwritten. Only what the build's own build.ninja names is copied (its
  outputs, a linked ELF .so among them, the sources in its folder, ninja's records), regular
  files only, never through a link, streamed and hashed in chunks, within a size counted by the
  larger of a file's length and its allocated blocks (a sparse file counts at its length); a
  folder holding anything else, however large, costs the parent nothing but a directory listing.

The key is the sha256 of the whole kernel file, the problem's (its code runs in the same
sandbox and could rewrite the build it leaves behind), the compile flags the environment sets,
the toolchain (C++ compiler and nvcc versions, torch, CUDA, Python) and the device (the arch).
So an entry is only ever restored into a run of exactly the code that made it.

Only bubblewrap sandboxes take part: their build folder has the same path in every sandbox,
which ninja's up-to-date check needs. Written only by the parent; never imports torch.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import shutil
import stat
import subprocess
import time
from pathlib import Path

from . import ninja
from ..common.procs import parent_pid
from ..common.version import RUNNER_VERSION

MANIFEST = "manifest.json"
TREE = "tree"
SKIP = ("lock",)  # torch's build lock: never part of a build
FLAG_VARS = ("TORCH_CUDA_ARCH_LIST", "CC", "CXX", "CUDA_HOME", "CUDA_PATH", "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS",
             "CFLAGS", "CXXFLAGS", "LDFLAGS")
ENV_KEYS = ("device_name", "torch", "cuda", "python", "runner_version")


def enabled() -> bool:
    return os.environ.get("KERNELLAB_BUILD_CACHE", "1") not in ("0", "false", "no")


def entry_limit_bytes() -> int:
    """The most one published build may hold (KERNELLAB_BUILD_CACHE_ENTRY_MB, default 128; a
    load_inline build with CUDA takes a few MB), each file counted by footprint()."""
    try:
        return max(1, int(os.environ.get("KERNELLAB_BUILD_CACHE_ENTRY_MB", "128"))) * 1024 * 1024
    except ValueError:
        return 128 * 1024 * 1024


FILES_MAX = 4096


def total_limit_bytes() -> int:
    """The most the whole cache keeps (KERNELLAB_BUILD_CACHE_MB, default 8192): past it the
    least recently used entries go, so old toolchains' builds do not fill the disk."""
    try:
        return max(1, int(os.environ.get("KERNELLAB_BUILD_CACHE_MB", "8192"))) * 1024 * 1024
    except ValueError:
        return 8192 * 1024 * 1024


def cache_dir() -> Path:
    """builds/ beside the baseline cache, under the parent's cache root."""
    from .sandbox import cache_root

    return cache_root() / "builds"


def uses_extensions(kernel_source: str) -> bool:
    return "cpp_extension" in kernel_source


@functools.lru_cache(maxsize=4)
def toolchain(device: str) -> str:
    """The compilers' own version lines, as torch's build will call them (CXX, else c++; nvcc)."""
    tools = [[os.environ.get("CXX") or "c++", "--version"]]
    if device == "cuda":
        from ..common.compile import cuda_home

        home = cuda_home()
        tools.append([os.path.join(home, "bin", "nvcc") if home else "nvcc", "--version"])
    lines = []
    for command in tools:
        try:
            lines.append(subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip())
        except (OSError, subprocess.SubprocessError) as exc:
            lines.append(f"{command[0]}: {type(exc).__name__}")
    return "\n".join(lines)


def key(kernel_source: str, problem_source: str, device: str, environment: dict) -> str:
    parts = [RUNNER_VERSION, device, hashlib.sha256(kernel_source.encode()).hexdigest(),
             hashlib.sha256(problem_source.encode()).hexdigest(), toolchain(device)]
    parts += [f"{k}={environment.get(k)}" for k in ENV_KEYS]
    parts += [f"{k}={os.environ.get(k, '')}" for k in FLAG_VARS]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


# --- the sandbox's build folder, held by the parent ------------------------------------------

class Held:
    """A directory descriptor of a sandbox's TORCH_EXTENSIONS_DIR, the uid that owns it and the
    folder's path as the sandbox sees it (torch writes the sources into build.ninja by that path)."""

    def __init__(self, fd: int, uid: int, inside: str | None = None):
        self.fd, self.uid, self.inside = fd, uid, (inside.rstrip("/") if inside else None)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def hold(sandbox) -> Held | None:
    """Open the warm sandbox's build folder through its mount namespace; None where the cache
    does not apply (plain processes, no slot) or the folder is not the slot's own."""
    from ..common.compile import cache_env
    from .isolation import INSIDE_ROOT

    if sandbox.isolation != "bwrap" or sandbox.slot is None:
        return None
    inside = cache_env(INSIDE_ROOT, create=False)["TORCH_EXTENSIONS_DIR"]
    try:
        inner = _inner_pid(sandbox)
        fd = os.open(f"/proc/{inner}/root{inside}", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except (OSError, ValueError, IndexError, TypeError):
        return None
    info = os.fstat(fd)
    if info.st_uid != sandbox.slot.uid or not stat.S_ISDIR(info.st_mode):
        os.close(fd)
        return None
    return Held(fd, sandbox.slot.uid, inside)


def _inner_pid(sandbox) -> int | None:
    """The outer bubblewrap's only child, which lives in the sandbox's namespaces."""
    pid = sandbox.process.pid
    try:
        return int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    for folder in sandbox.cgroups.folders() if sandbox.cgroups else []:  # without /proc/.../children
        for candidate in (folder / "cgroup.procs").read_text().split():
            if parent_pid(candidate) == pid:
                return int(candidate)
    return None


# --- restore ---------------------------------------------------------------------------------

def _manifest(entry: Path, cache_key: str) -> dict | None:
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        if manifest.get("key") != cache_key or not isinstance(manifest.get("files"), dict):
            return None
        return manifest
    except (OSError, ValueError):
        return None


def restore(held: Held, cache_key: str) -> bool:
    """Copy the entry for `cache_key` into the held folder; False if there is none or it does not
    match its manifest (then whatever was copied is removed again: the run builds for itself)."""
    entry = cache_dir() / cache_key
    manifest = _manifest(entry, cache_key)
    if manifest is None:
        return False
    written: list[tuple[int, str]] = []
    opened: list[int] = []
    try:
        for relative, facts in sorted(manifest["files"].items()):
            parts = relative.split("/")
            if any(p in ("", ".", "..") for p in parts):
                raise ValueError(relative)
            folder = _folders(held, parts[:-1], opened)
            source = os.open(entry / TREE / relative, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             facts["mode"] & 0o755, dir_fd=folder)
                written.append((folder, parts[-1]))
                try:
                    if _stream(source, fd, facts["size"]) != facts["sha256"]:
                        raise ValueError(relative)  # removed again below with the rest
                    os.fchown(fd, held.uid, held.uid)
                    os.utime(fd, ns=(facts["mtime_ns"], facts["mtime_ns"]))
                finally:
                    os.close(fd)
            finally:
                os.close(source)
        _used(entry)
        return True
    except (OSError, ValueError, KeyError, TypeError):
        for folder, name in written:
            try:
                os.unlink(name, dir_fd=folder)
            except OSError:
                pass
        return False
    finally:
        for fd in opened:
            os.close(fd)


def _folders(held: Held, parts: list[str], opened: list[int]) -> int:
    folder = held.fd
    for part in parts:
        try:
            os.mkdir(part, 0o755, dir_fd=folder)
            os.chown(part, held.uid, held.uid, dir_fd=folder, follow_symlinks=False)
        except FileExistsError:
            pass
        folder = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
        opened.append(folder)
    return folder


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# --- publish ---------------------------------------------------------------------------------

NINJA = "build.ninja"
NINJA_OWN = (".ninja_log", ".ninja_deps")  # ninja's records of commands and headers: its up-to-date check
NINJA_LIMIT = 1024 * 1024
CHUNK = 1024 * 1024
ELF = b"\x7fELF"


def publish(held: Held, cache_key: str) -> bool:
    """After the sandbox has exited: the files its builds' own build.ninja name become the entry
    for `cache_key`, unless one exists. Nothing else of the folder is read; links, devices and
    pipes are never followed; each file is copied and hashed as a stream."""
    folder = cache_dir()
    if (folder / cache_key).exists():
        return False
    named = _named(held)
    if not named:
        return False
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = folder / f".staging-{secrets.token_hex(8)}"
    try:
        manifest = {"key": cache_key, "runner_version": RUNNER_VERSION, "published_at": time.time(), "files": {}}
        for relative, info in sorted(named.items()):
            target = staging / TREE / relative
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            manifest["files"][relative] = {"size": info.st_size, "sha256": _copy_out(held, relative, info, target),
                                           "mode": stat.S_IMODE(info.st_mode), "mtime_ns": info.st_mtime_ns}
        (staging / MANIFEST).write_text(json.dumps(manifest))
        os.rename(staging, folder / cache_key)  # fails if the entry exists: never overwritten
    except (OSError, ValueError):
        return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    evict()
    return True


def footprint(info: os.stat_result) -> int:
    """What a file costs the cache: its length, or the blocks it holds if more. A sparse file
    counts at its length, which is what its copy would take."""
    return max(info.st_size, info.st_blocks * 512)


def _named(held: Held) -> dict[str, os.stat_result]:
    """relative path -> fstat of every file the build folders' build.ninja name; {} if there is
    none, or they hold more than one entry may (files or bytes)."""
    files: dict[str, os.stat_result] = {}
    with os.scandir(held.fd) as entries:
        for count, entry in enumerate(entries):
            if count >= FILES_MAX:
                return {}
            if entry.is_dir(follow_symlinks=False):
                files.update({f"{entry.name}/{name}": info for name, info in _build(held, entry.name).items()})
    if len(files) > FILES_MAX or sum(footprint(info) for info in files.values()) > entry_limit_bytes():
        return {}
    return files


def _build(held: Held, build: str) -> dict[str, os.stat_result]:
    """The files one build folder's build.ninja names, each a regular file directly in the folder:
    build.ninja, ninja's records, every output and the inputs that lie in the folder. {} unless
    every output is there and one of them is a linked library (.so, an ELF file)."""
    try:
        folder = os.open(build, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=held.fd)
    except OSError:
        return {}
    try:
        text = _head(folder, NINJA, NINJA_LIMIT + 1)
        if not text or len(text) > NINJA_LIMIT:
            return {}
        plan = ninja.statements(text.decode(errors="replace"))
        base = f"{held.inside}/{build}" if held.inside else None
        outputs = [_local(path, base) for statement in plan for path in statement.outputs]
        if not outputs or None in outputs:
            return {}  # nothing made, or something made outside the folder or under a variable's name
        inputs = [_local(path, base) for statement in plan for path in statement.inputs]
        wanted = {NINJA, *outputs, *(name for name in inputs if name is not None)}  # others: the toolchain's
        if len(wanted) > FILES_MAX:
            return {}
        files = {}
        for name in sorted(wanted) + [name for name in NINJA_OWN if name not in wanted]:
            info = _regular(folder, name)
            if info is None and name not in NINJA_OWN:
                return {}
            if info is not None:
                files[name] = info
        libraries = [name for name in outputs if name.endswith(".so")]
        if not libraries or not all(_head(folder, name, 4) == ELF for name in libraries):
            return {}  # nothing was linked: an empty or made-up .so is no build
        return files
    finally:
        os.close(folder)


def _local(path: str | None, base: str | None) -> str | None:
    """`path` as a name directly in the build folder (ninja runs there; torch writes the sources
    there by absolute path); None for anything elsewhere or unknown."""
    if path is None:
        return None
    if path.startswith("/"):
        if not base or not path.startswith(base + "/"):
            return None
        path = path[len(base) + 1:]
    name = os.path.normpath(path)
    return name if "/" not in name and name not in ("", ".", "..") else None


def _open_regular(folder: int, name: str) -> tuple[int, os.stat_result] | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None  # a link (O_NOFOLLOW), or absent
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, info


def _regular(folder: int, name: str) -> os.stat_result | None:
    opened = _open_regular(folder, name)
    if opened is not None:
        os.close(opened[0])
    return opened and opened[1]


def _head(folder: int, name: str, limit: int) -> bytes:
    """The first `limit` bytes of a regular file; b"" if it is not one."""
    opened = _open_regular(folder, name)
    if opened is None:
        return b""
    try:
        return os.read(opened[0], limit)
    finally:
        os.close(opened[0])


def _copy_out(held: Held, relative: str, info: os.stat_result, target: Path) -> str:
    """Copy one named file to `target` in chunks; its sha256. ValueError if it is not the file
    that was sized (another inode, another length)."""
    build, name = relative.split("/")
    folder = os.open(build, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=held.fd)
    try:
        opened = _open_regular(folder, name)
    finally:
        os.close(folder)
    if opened is None:
        raise ValueError(relative)
    fd, now = opened
    try:
        if (now.st_ino, now.st_size) != (info.st_ino, info.st_size):
            raise ValueError(relative)
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            return _stream(fd, out, info.st_size)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _stream(source: int, target: int, size: int) -> str:
    """Copy exactly `size` bytes, in chunks, hashing on the way; ValueError if there are not."""
    digest, copied = hashlib.sha256(), 0
    while True:
        chunk = os.read(source, min(CHUNK, size + 1 - copied))
        if not chunk:
            break
        copied += len(chunk)
        if copied > size:
            raise ValueError("longer than it said")
        digest.update(chunk)
        _write_all(target, chunk)
    if copied != size:
        raise ValueError("shorter than it said")
    return digest.hexdigest()


def _used(entry: Path) -> None:
    """A hit makes the entry the most recently used (its folder's mtime is the age evict reads)."""
    try:
        os.utime(entry)
    except OSError:
        pass


def evict() -> list[str]:
    """Remove the least recently used entries until the cache fits total_limit_bytes(); the
    removed keys. An entry goes by one rename out of its key's name first, so a restore running
    meanwhile finds it whole or not at all (a half-read one fails its checks and builds afresh)."""
    folder, entries = cache_dir(), []
    try:
        names = [p for p in folder.iterdir() if not p.name.startswith(".")]
    except OSError:
        return []
    for entry in names:
        manifest = _manifest(entry, entry.name)
        try:
            used = entry.stat().st_mtime
        except OSError:
            continue
        size = sum(int(f.get("size", 0)) for f in manifest["files"].values()) if manifest else 0
        entries.append((used if manifest else 0.0, size, entry))  # an unreadable entry goes first
    total, removed = sum(size for _, size, _ in entries), []
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total <= total_limit_bytes():
            break
        doomed = folder / f".evicted-{secrets.token_hex(8)}"
        try:
            os.rename(entry, doomed)
        except OSError:
            continue
        shutil.rmtree(doomed, ignore_errors=True)
        total -= size
        removed.append(entry.name)
    return removed


# --- one evaluation --------------------------------------------------------------------------

class Builds:
    """The cache around one evaluation: `prepare` before the job is sent, `finish` after the
    sandbox has exited. `state` is what the verdict says: off, hit, miss or published."""

    def __init__(self, sandbox, job: dict, environment: dict):
        self.held, self.key, self.state, self.restore_s, self.warm_wait_s = None, None, "off", None, 0.0
        if not enabled() or not uses_extensions(job.get("kernel_source", "")):
            return
        waited = time.monotonic()
        ready = sandbox.wait_ready()
        self.warm_wait_s = time.monotonic() - waited  # counted as the sandbox's warm wait
        if ready is None:
            sandbox.messages.put(None)  # the end-of-messages mark it took: the run must see it too
            return
        self.held = hold(sandbox)
        if self.held is None:
            return
        self.key = key(job["kernel_source"], job["problem_source"], job["device"], environment)
        began = time.perf_counter()
        self.state = "hit" if restore(self.held, self.key) else "miss"
        self.restore_s = round(time.perf_counter() - began, 4)

    def finish(self, verdict: dict | None) -> None:
        try:
            if self.held is not None and self.state == "miss" and verdict and \
                    verdict.get("status") not in (None, "compile_error"):
                if publish(self.held, self.key):
                    self.state = "published"
        finally:
            if self.held is not None:
                self.held.close()

    def describe(self) -> dict:
        return {"state": self.state, "key": self.key, "restore_s": self.restore_s}
