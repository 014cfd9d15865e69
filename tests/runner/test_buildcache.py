"""The load_inline build cache (runner/host/buildcache.py) with real bubblewrap sandboxes and a real
g++ build on the CPU: identical sources build once, a hit runs no compiler at all, an entry is
never overwritten, and a kernel cannot reach the cache to poison it. Plus the parent-side
copy rules on plain folders (links, manifests, never overwriting)."""

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

import runner
from runner.common import compile as compiling
from runner.host import buildcache, isolation

from . import sources

BWRAP = isolation.unavailable_reason() is None
needs_bwrap = pytest.mark.skipif(not BWRAP, reason="needs root and bubblewrap (the cache serves bwrap sandboxes)")

KERNEL = sources.SILU_LOAD_INLINE.replace('name="silu_inline"', 'name="silu_cached"')

# Runs with a correct result while trying every way at the cache it could know of: the host's
# cache folder (its path written in by the test), and a bogus build under the honest kernel's
# extension name in its own build folder, which a cache keyed by extension name would publish.
ATTACK = KERNEL.replace('name="silu_cached"', 'name="silu_attacker"') + '''

import os as _os

TRIED = []
for _target in CACHE_PATHS:
    try:
        _os.makedirs(_target, exist_ok=True)
        with open(_os.path.join(_target, "manifest.json"), "w") as _out:
            _out.write("{}")
        TRIED.append("wrote " + _target)
    except OSError as _exc:
        TRIED.append(f"refused {_target}: {type(_exc).__name__}")
_honest = _os.path.join(_os.environ["TORCH_EXTENSIONS_DIR"], "silu_cached")
_os.makedirs(_honest, exist_ok=True)
for _name in ("silu_cached.so", "main.cpp", "main.o", "build.ninja"):
    with open(_os.path.join(_honest, _name), "w") as _out:
        _out.write("poisoned")
print("ATTACK", TRIED)
'''


def entry_digest(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def compiler(tmp_path, monkeypatch):
    """A C++ compiler the test can switch off: a wrapper over g++ that refuses to compile while
    a file named `disabled` lies beside its folder (version queries still answer, so the cache
    key stays the same). The sandbox sees the wrapper's folder read-only, as any toolchain."""
    home = tmp_path / "toolchain"
    (home / "bin").mkdir(parents=True)
    wrapper = home / "bin" / "c++"
    real = compiling.shutil.which("g++") or "/usr/bin/g++"
    wrapper.write_text(f"""#!/bin/sh
case "$1" in --version|-dumpversion|-dumpfullversion) exec {real} "$@" ;; esac
if [ -e "{home}/disabled" ]; then echo "c++: disabled by the test" >&2; exit 1; fi
exec {real} "$@"
""")
    wrapper.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    monkeypatch.setenv("CXX", str(wrapper))
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    buildcache.toolchain.cache_clear()
    yield home
    buildcache.toolchain.cache_clear()


@needs_bwrap
@pytest.mark.slow
def test_identical_sources_build_once_and_a_kernel_cannot_poison_the_cache(compiler, tmp_path):
    cache = tmp_path / "cache" / "builds"
    with runner.Pool(device="cpu", size=0) as pool:
        first = pool.evaluate(sources.SILU_PROBLEM, KERNEL, seed=3, timeout=600)
        assert first["status"] == "correct", first["reason"] + first.get("log", "")
        assert first["build_cache"]["state"] == "published", first["build_cache"]
        entries = [p for p in cache.iterdir() if not p.name.startswith(".")]
        assert len(entries) == 1
        honest = entry_digest(entries[0])
        assert any(name.endswith("silu_cached.so") for name in honest)
        assert stat.S_IMODE(cache.stat().st_mode) == 0o700

        attack = ATTACK.replace("CACHE_PATHS", repr([str(entries[0]), str(cache), str(tmp_path / "cache")]))
        attacked = pool.evaluate(sources.SILU_PROBLEM, attack, seed=3, timeout=600)
        assert attacked["status"] == "correct", attacked["reason"] + attacked.get("log", "")
        assert entry_digest(entries[0]) == honest  # the honest entry is byte for byte what it was
        # Its own build (bogus files included) may be published, under its own key only.
        assert {p.name for p in cache.iterdir()} <= {entries[0].name, attacked["build_cache"]["key"]}

        (compiler / "disabled").touch()  # from here on any compile fails
        again = pool.evaluate(sources.SILU_PROBLEM, KERNEL, seed=4, timeout=600)
        assert again["status"] == "correct", again["reason"] + again.get("log", "")
        assert again["build_cache"]["state"] == "hit"
        assert entry_digest(entries[0]) == honest  # a hit publishes nothing

        changed = pool.evaluate(sources.SILU_PROBLEM, KERNEL + "\n# one more line\n", seed=4, timeout=600)
        assert changed["status"] == "compile_error", changed["reason"]  # the compiler really is off
        assert changed["build_cache"]["state"] == "miss"


# --- the parent's copy rules, on plain folders ------------------------------------------------

def held_folder(path: Path) -> buildcache.Held:
    path.mkdir(parents=True, exist_ok=True)
    return buildcache.Held(os.open(path, os.O_RDONLY | os.O_DIRECTORY), os.getuid(), str(path))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELLAB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "builds"


# What torch's cpp_extension writes: objects and the library by relative name, the sources by
# absolute path, system headers and libraries outside the folder.
NINJA = """ninja_required_version = 1.3
cxx = c++
rule compile
  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out
  depfile = $out.d
  deps = gcc
rule link
  command = $cxx $in $ldflags -o $out
build main.o: compile {folder}/main.cpp | /usr/include/stdio.h
build ext.so: link main.o /usr/lib/libc.so
default ext.so
"""


def fake_build(folder: Path, ninja: str = NINJA) -> None:
    build = folder / "ext"
    build.mkdir(parents=True)
    (build / "main.cpp").write_text("int f();")
    (build / "main.o").write_bytes(b"\x7fELF object")
    (build / "ext.so").write_bytes(b"\x7fELF built")
    (build / ".ninja_log").write_text("# ninja log v5\n")
    (build / "build.ninja").write_text(ninja.format(folder=build))
    os.utime(build / "main.cpp", ns=(1_000_000_000, 1_000_000_123))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def test_publish_keeps_files_and_mtimes_skips_links_and_never_overwrites(tmp_path, cache_dir):
    sandbox = tmp_path / "sandbox"
    fake_build(sandbox)
    (sandbox / "ext" / "secret").symlink_to("/etc/hostname")
    (sandbox / "ext" / "lock").write_text("")
    (sandbox / "ext" / "notes.txt").write_text("not part of the build")
    os.mkfifo(sandbox / "ext" / "pipe")
    held = held_folder(sandbox)
    assert buildcache.publish(held, "k1")
    manifest = json.loads((cache_dir / "k1" / "manifest.json").read_text())
    assert sorted(manifest["files"]) == ["ext/.ninja_log", "ext/build.ninja", "ext/ext.so", "ext/main.cpp",
                                         "ext/main.o"]  # what build.ninja names, and ninja's own log
    assert manifest["files"]["ext/main.cpp"]["mtime_ns"] == 1_000_000_123

    (sandbox / "ext" / "ext.so").write_bytes(b"something else")
    assert not buildcache.publish(held, "k1")  # the first build stays
    assert (cache_dir / "k1" / "tree" / "ext" / "ext.so").read_bytes() == b"\x7fELF built"
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".staging")]


def test_restore_copies_with_mtimes_and_refuses_an_entry_that_does_not_match(tmp_path, cache_dir):
    fake_build(tmp_path / "built")
    assert buildcache.publish(held_folder(tmp_path / "built"), "k2")
    target = tmp_path / "fresh"
    assert buildcache.restore(held_folder(target), "k2")
    assert (target / "ext" / "ext.so").read_bytes() == b"\x7fELF built"
    assert (target / "ext" / "main.cpp").stat().st_mtime_ns == 1_000_000_123

    (cache_dir / "k2" / "tree" / "ext" / "ext.so").write_bytes(b"\x7fELF tampered")
    other = tmp_path / "other"
    assert not buildcache.restore(held_folder(other), "k2")
    assert not (other / "ext" / "ext.so").exists()  # nothing of a bad entry is left behind
    assert not buildcache.restore(held_folder(other), "missing")


def test_nothing_is_published_without_a_built_extension_or_past_the_size_limit(tmp_path, cache_dir, monkeypatch):
    (tmp_path / "empty" / "ext").mkdir(parents=True)
    (tmp_path / "empty" / "ext" / "main.cpp").write_text("x")
    assert not buildcache.publish(held_folder(tmp_path / "empty"), "k3")
    fake_build(tmp_path / "big")
    (tmp_path / "big" / "ext" / "ext.so").write_bytes(b"\x7fELF" + b"0" * (2 * 1024 * 1024))
    monkeypatch.setenv("KERNELLAB_BUILD_CACHE_ENTRY_MB", "1")
    assert not buildcache.publish(held_folder(tmp_path / "big"), "k4")


HALF_GB = 500 * 1024 * 1024


def sparse(path: Path, size: int = HALF_GB) -> None:
    """A file that says it is `size` bytes long and holds almost no blocks."""
    with open(path, "wb") as out:
        out.truncate(size)


@pytest.mark.parametrize("ninja", [None, "build other.o: compile other.cpp\n",
                                   "build ext.so: link main.o\nbuild main.o: compile main.cpp\n"])
def test_a_folder_that_built_nothing_is_not_published_and_nothing_is_copied(tmp_path, cache_dir, ninja):
    """A kernel that only mentions cpp_extension and leaves a 500 MB sparse file and an empty .so
    in its build folder: without a build.ninja naming a linked library there is nothing to keep."""
    build = tmp_path / "sandbox" / "ext"
    build.mkdir(parents=True)
    sparse(build / "main.o")
    (build / "ext.so").write_bytes(b"")
    (build / "main.cpp").write_text("int f();")
    if ninja is not None:
        (build / "build.ninja").write_text(ninja)
    assert not buildcache.publish(held_folder(tmp_path / "sandbox"), "k5")
    assert folder_bytes(cache_dir.parent) < 64 * 1024  # nothing of the 500 MB was copied


def test_a_sparse_file_named_by_the_build_counts_at_its_length(tmp_path, cache_dir):
    """A made-up build.ninja naming a 500 MB sparse object beside a real library: sized by its
    length (the copy would hold that much), it is past the entry limit before anything is copied."""
    fake_build(tmp_path / "sandbox")
    sparse(tmp_path / "sandbox" / "ext" / "main.o")
    assert os.stat(tmp_path / "sandbox" / "ext" / "main.o").st_blocks * 512 < 1024 * 1024
    assert not buildcache.publish(held_folder(tmp_path / "sandbox"), "k6")
    assert folder_bytes(cache_dir.parent) < 64 * 1024


def test_only_files_in_the_build_folder_are_kept_and_a_named_link_is_refused(tmp_path, cache_dir):
    outside = NINJA.replace("build ext.so: link main.o", "build ext.so: link main.o ../other/secret.o")
    fake_build(tmp_path / "a", outside)
    assert buildcache.publish(held_folder(tmp_path / "a"), "k7")  # an input elsewhere is the toolchain's
    assert "ext/secret.o" not in json.loads((cache_dir / "k7" / "manifest.json").read_text())["files"]

    fake_build(tmp_path / "b")
    (tmp_path / "b" / "ext" / "main.o").unlink()
    (tmp_path / "b" / "ext" / "main.o").symlink_to("/etc/hostname")
    assert not buildcache.publish(held_folder(tmp_path / "b"), "k8")  # an output that is a link: no build

    fake_build(tmp_path / "c", NINJA.replace("build ext.so:", "build /tmp/ext.so:"))
    assert not buildcache.publish(held_folder(tmp_path / "c"), "k9")  # it says it made something elsewhere


def test_the_key_covers_kernel_problem_flags_and_device(monkeypatch):
    env = {"device_name": "NVIDIA H200", "torch": "2.11.0", "cuda": "13.0", "python": "3.12.3"}
    base = buildcache.key("kernel", "problem", "cpu", env)
    assert base == buildcache.key("kernel", "problem", "cpu", dict(env))
    assert base != buildcache.key("kernel ", "problem", "cpu", env)
    assert base != buildcache.key("kernel", "problem2", "cpu", env)
    assert base != buildcache.key("kernel", "problem", "cpu", {**env, "device_name": "NVIDIA H100"})
    assert base != buildcache.key("kernel", "problem", "cpu", {**env, "torch": "2.12.0"})
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    assert base != buildcache.key("kernel", "problem", "cpu", env)


# --- build priority ---------------------------------------------------------------------------

# Correct only if its import (the build phase) ran at SCHED_IDLE, nice 19, could not get out of
# either, and its forward (after the device grant) runs at normal priority again.
PRIORITY_PROBE = sources.SILU_KERNEL.replace("class ModelNew", '''
BUILD_POLICY = (os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0))
ESCAPED = []
for _attempt in (lambda: os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0)),
                 lambda: os.setpriority(os.PRIO_PROCESS, 0, 0)):
    try:
        _attempt()
        ESCAPED.append(True)
    except OSError:
        pass


class ModelNew''', 1).replace("LIB.silu(x.data_ptr(), y.data_ptr(), x.numel())", '''idle = BUILD_POLICY == (os.SCHED_IDLE, 19) and not ESCAPED
        normal = os.sched_getscheduler(0) == os.SCHED_OTHER and os.getpriority(os.PRIO_PROCESS, 0) == 0
        LIB.silu(x.data_ptr(), y.data_ptr(), x.numel() if idle and normal else 0)''')


@pytest.mark.slow
@needs_bwrap
def test_builds_run_idle_and_cannot_leave_it_and_the_device_phases_run_normally(cpu_pool):
    result = cpu_pool.evaluate(sources.SILU_PROBLEM, PRIORITY_PROBE, seed=5, timeout=300)
    assert result["status"] == "correct", result["reason"] + result.get("log", "")


def test_past_its_size_the_cache_drops_the_least_recently_used_entry(tmp_path, cache_dir, monkeypatch):
    def publish(key: str) -> None:
        fake_build(tmp_path / key)
        (tmp_path / key / "ext" / "ext.so").write_bytes(b"\x7fELF" + b"0" * (800 * 1024))
        assert buildcache.publish(held_folder(tmp_path / key), key)

    publish("k1")
    publish("k2")
    for age, key in ((300, "k1"), (200, "k2")):
        then = (cache_dir / key).stat().st_mtime - age
        os.utime(cache_dir / key, (then, then))
    assert buildcache.restore(held_folder(tmp_path / "again"), "k1")  # k1 used again: now the newest of the two
    monkeypatch.setenv("KERNELLAB_BUILD_CACHE_MB", "2")
    publish("k3")  # 2.4 MB in all: the least recently used entry goes
    assert sorted(p.name for p in cache_dir.iterdir()) == ["k1", "k3"]
    assert buildcache.evict() == []  # within the limit now
    assert not buildcache.restore(held_folder(tmp_path / "late"), "k2")  # an evicted entry is simply a miss
