"""How a sandbox is walled in: bubblewrap (a kept, audited tool) builds the candidate's
world, and the parent decides everything about it before any candidate code exists.

- Its own host uid per sandbox slot (never root, never the app's user): launch.py joins
  the sandbox's cgroups and sets its rlimits, bubblewrap (as root) builds PID, mount,
  network, IPC, UTS and cgroup namespaces and loads the seccomp filter of seccomp.py,
  then setpriv drops to the slot's uid and gid with no groups, no capabilities (bounding
  set included) and no_new_privs. There is no user namespace: the candidate is an
  ordinary unprivileged user of the host, and the filter refuses making one.
- The filesystem is a fresh tmpfs root holding only read-only binds of what the child
  needs: /usr (interpreter, compilers, CUDA toolkit), the Python prefix and site-packages,
  the runner package alone (not the repository), a minimal /etc (no shadow, a passwd of
  its own), /sys, the GPU device nodes. Writable: a size-limited /tmp holding its work
  folder and compile caches, and a private /dev/shm. The data folder, ~/.ssh, ~/.config,
  other users' files and every host Unix socket are simply not there.
"""

from __future__ import annotations

import fcntl
import glob
import os
import pwd
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..common import procs
from . import seccomp
from ..common.errors import RunnerError

RUNNER_PACKAGE = Path(__file__).resolve().parent.parent
INSIDE_RUNNER = "/opt/kernellab"  # the runner package is mounted at /opt/kernellab/runner
INSIDE_ROOT = "/tmp/kernellab"     # the sandbox's work folder and caches
UID_BASE_DEFAULT = 61000            # Debian keeps 60000-64999 free of local users
SLOTS_MAX = 256
ETC_FILES = ("ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf", "host.conf")
ETC_FOLDERS = ("ld.so.conf.d", "alternatives")


def bwrap_path() -> str | None:
    return os.environ.get("KERNELLAB_BWRAP") or shutil.which("bwrap")


def unavailable_reason() -> str | None:
    """Why the bubblewrap sandbox cannot run here, in words a person can act on; None if it can."""
    if os.geteuid() != 0:
        return ("the sandbox gives each candidate a uid of its own, which needs the worker to run as root "
                "(it drops to that uid before any candidate code runs). Run the worker as root, or, only on a "
                "machine where every kernel is trusted, set KERNELLAB_SANDBOX_ISOLATION=process")
    if not bwrap_path():
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap; scripts/setup does it as root)"
    if not shutil.which("setpriv"):
        return "setpriv (util-linux) is not installed"
    try:
        seccomp.program()
    except seccomp.SeccompUnavailable as exc:
        return str(exc)
    return None


SECRET_NAMES = ("ANTHROPIC_API_KEY", "SECRET_KEY", "DATABASE_URL", "REDIS_URL")
SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_SECRET_ACCESS_KEY")


def held_secrets(environ=os.environ) -> list[str]:
    """Names of variables in this process's environment that a plain-process candidate could read
    from /proc/<parent>/environ. A URL counts only when it carries credentials."""
    held = []
    for name, value in environ.items():
        if name.endswith("_URL") and name in SECRET_NAMES:
            if "@" in value.partition("://")[2].split("/", 1)[0]:
                held.append(name)
        elif name in SECRET_NAMES or name.endswith(SECRET_SUFFIXES):
            held.append(name)
    return sorted(held)


class Slot:
    """One sandbox slot: a uid no one else uses while this slot is held (a lock file per
    slot, so several worker processes on one host never share one)."""

    def __init__(self):
        base = int(os.environ.get("KERNELLAB_SANDBOX_UID_BASE", UID_BASE_DEFAULT))
        folder = Path(tempfile.gettempdir()) / "kernellab-slots"
        folder.mkdir(mode=0o700, exist_ok=True)
        for index in range(SLOTS_MAX):
            uid = base + index
            if _uid_taken(uid):
                continue
            handle = open(folder / f"{uid}.lock", "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            if procs.of_uid(uid):  # left by a worker that died before its slots were free
                _release_when_gone(uid, handle)
                continue
            self.uid, self._handle = uid, handle
            return
        raise RunnerError(f"no free sandbox slot among uids {base}..{base + SLOTS_MAX - 1}")

    def release(self) -> None:
        """Give the uid back once no process runs as it. A killed CUDA process can take seconds to
        tear down and keeps its device memory meanwhile; NVML charges that memory to the uid
        (gpumem.py), so a sandbox started under it too early would pay for its predecessor. Until
        then the slot stays locked, and the pool takes another uid."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        if procs.of_uid(self.uid):
            _release_when_gone(self.uid, handle)
        else:
            _unlock(handle)


def _release_when_gone(uid: int, handle) -> None:
    """In a thread of its own: kill what still runs as `uid` (whatever outlived the sandbox's own
    kill: a new session, no cgroup), then unlock the slot once it is gone."""
    threading.Thread(target=_kill_then_unlock, args=(uid, handle), daemon=True, name=f"slot-{uid}").start()


def _kill_then_unlock(uid: int, handle) -> None:
    pause = 0.05
    while left := procs.of_uid(uid):
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(pause)
        pause = min(1.0, pause * 2)
    _unlock(handle)


def _unlock(handle) -> None:
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()


def _uid_taken(uid: int) -> bool:
    if uid == 0 or uid == os.getuid():
        return True
    try:
        pwd.getpwuid(uid)
        return True  # a real account: never run a candidate as it
    except KeyError:
        return False


class Command:
    """The bubblewrap command line for one sandbox and the descriptors it needs passed."""

    def __init__(self, *, uid: int, device: str, disk_mb: int, host_root: str, hidden: list[str],
                 extra_paths: list[str]):
        self.uid, self.device, self.disk_mb = uid, device, disk_mb
        self.host_root, self.hidden = host_root, hidden
        self.fds: list[int] = []  # descriptors bubblewrap reads (the seccomp program)
        self._made: set[str] = set()    # folders made in the new root
        self._mounts: set[str] = set()  # mount points (what lies below them is the host's)
        # bubblewrap runs as root (so it can bind folders the slot's uid cannot traverse,
        # such as a Python under /root); the candidate gets no user namespace at all: a
        # plain uid of its own, dropped to by setpriv before anything else runs.
        self.args: list[str] = [bwrap_path(), "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                                "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname",
                                "kernellab", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                                "--cap-add", "CAP_SETPCAP"]
        self._system()
        # The private /tmp first: binds made after it sit on top of it, so an interpreter or a
        # checkout that lives under the host's /tmp (a CI clone, say) stays visible inside.
        self._writable()
        for path in _python_paths() + extra_paths:
            self._ro_bind(path)
        self._ro_bind(str(RUNNER_PACKAGE), f"{INSIDE_RUNNER}/runner")
        self._etc()
        if device == "cuda":
            for node in sorted(glob.glob("/dev/nvidia*")):
                if os.path.exists(node) and not os.path.isdir(node):
                    self.args += ["--dev-bind", node, node]
            if os.path.isdir("/dev/nvidia-caps"):
                self._ro_bind("/dev/nvidia-caps", flag="--dev-bind")
        self._hide()
        self.args += ["--seccomp", str(self._fd(seccomp.program_fd()))]

    def _fd(self, fd: int) -> int:
        os.set_inheritable(fd, True)
        self.fds.append(fd)
        return fd

    def _ro_bind(self, source: str, dest: str | None = None, *, flag: str = "--ro-bind") -> None:
        real = os.path.realpath(source)
        if not os.path.exists(real):
            return
        if dest is None and self._visible(os.path.abspath(source)) and self._visible(real):
            return  # already there through a folder bound above it (e.g. /usr/local/cuda under /usr)
        target = dest or real
        self._parents(target)
        self.args += [flag, real, target]
        self._mounts.add(target)
        if dest is None and real != os.path.abspath(source) and not self._visible(os.path.abspath(source)):
            self._parents(os.path.abspath(source))
            self.args += ["--symlink", real, os.path.abspath(source)]

    def _visible(self, path: str) -> bool:
        return any(path == m or path.startswith(m.rstrip("/") + "/") for m in self._mounts)

    def _parents(self, path: str) -> None:
        """Folders above a mount point, made searchable (bubblewrap would copy a host
        folder's 0700, e.g. /root's, and lock the slot's uid out)."""
        parts = Path(path).parts[1:-1]
        for i in range(len(parts)):
            folder = "/" + "/".join(parts[:i + 1])
            if folder in self._made or folder in self._mounts or \
                    any(folder.startswith(m.rstrip("/") + "/") for m in self._mounts):
                continue
            self.args += ["--perms", "0755", "--dir", folder]
            self._made.add(folder)

    def drop(self) -> list[str]:
        """The command prefix run inside, before anything else: become the slot's uid."""
        return [shutil.which("setpriv") or "/usr/bin/setpriv", "--reuid", str(self.uid), "--regid", str(self.uid),
                "--clear-groups", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]

    def _system(self) -> None:
        self._ro_bind("/usr")
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = f"/{name}"
            if os.path.islink(path):
                self.args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                self._ro_bind(path)
        # /opt/nvidia: where the ncu launcher on PATH looks for Nsight Compute (the probe's counter trial)
        for folder in ("/opt/cuda", "/opt/nvidia"):
            if os.path.isdir(folder):
                self._ro_bind(folder)
        self.args += ["--proc", "/proc", "--dev", "/dev", "--ro-bind", "/sys", "/sys"]

    def _etc(self) -> None:
        for name in ETC_FILES + ETC_FOLDERS:
            if os.path.exists(f"/etc/{name}"):
                self._ro_bind(f"/etc/{name}", f"/etc/{name}")
        etc = Path(self.host_root) / "etc"
        etc.mkdir(exist_ok=True)
        (etc / "passwd").write_text(f"root:x:0:0::/:/usr/sbin/nologin\nkernellab:x:{self.uid}:{self.uid}::"
                                    f"{INSIDE_ROOT}/home:/bin/sh\nnobody:x:65534:65534::/:/usr/sbin/nologin\n")
        (etc / "group").write_text(f"root:x:0:\nkernellab:x:{self.uid}:\nnogroup:x:65534:\n")
        (etc / "hosts").write_text("127.0.0.1 localhost kernellab\n")
        for name in ("passwd", "group", "hosts"):
            self._ro_bind(str(etc / name), f"/etc/{name}")
        os.chmod(self.host_root, 0o755)

    def _writable(self) -> None:
        size = str(self.disk_mb * 1024 * 1024)
        self.args += ["--perms", "1777", "--size", size, "--tmpfs", "/tmp",
                      "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm"]

    def _hide(self) -> None:
        """Secret paths that lie under a bound folder (e.g. a data folder inside a prefix)
        get an empty mount over them; without capabilities and with umount refused, it holds."""
        bound = [self.args[i + 2] for i, a in enumerate(self.args) if a == "--ro-bind"]
        for path in self.hidden:
            real = os.path.realpath(path)
            if any(real == b or real.startswith(b.rstrip("/") + "/") for b in bound):
                if os.path.isdir(real):
                    self.args += ["--perms", "0000", "--tmpfs", real]
                else:
                    self.args += ["--ro-bind", "/dev/null", real]


def _python_paths() -> list[str]:
    """The interpreter's prefixes and every folder on its import path (site-packages,
    PYTHONPATH entries), minus the repository: the child imports the runner from its own
    mount. Paths as Python knows them (a venv reached through a link keeps its link)."""
    repo = str(RUNNER_PACKAGE.parent)
    prefixes = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    others = [p for p in sys.path if p and os.path.isdir(p)]
    others += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.isdir(p)]
    chosen: dict[str, str] = {}  # real path -> path as given
    for path in prefixes + others:
        real = os.path.realpath(path)
        if real == "/" or real == "/usr" or real.startswith("/usr/") or real == repo:
            continue
        if repo.startswith(real.rstrip("/") + "/"):
            continue  # a folder above the repository would bring all of it in
        if path not in prefixes and real.startswith(repo + "/"):
            continue  # e.g. the tests folder pytest puts on sys.path
        chosen.setdefault(real, os.path.abspath(path))
    keep = [r for r in chosen if not any(r.startswith(q.rstrip("/") + "/") for q in chosen if q != r)]
    return [chosen[r] for r in keep]
