"""The sandbox's system-call filter, compiled by libseccomp (through ctypes: the library is
on every distribution, its Python binding is not) into a BPF program that bubblewrap loads.

Default allow, a deny-list of calls a kernel never needs and an escape would: mounts and
namespaces (the candidate's view of the filesystem is built by bubblewrap before the
filter applies), tracing and reading other processes' memory, the kernel keyring, BPF,
module and kexec loading, io_uring (its operations pass by the filter), userfaultfd,
perf events, and moving its own threads off the cores it is timed on. clone3 answers
ENOSYS so libc falls back to clone, whose namespace flags are refused; other
architectures' calls (int 0x80) kill the process (libseccomp's default).

Sockets are allow-listed by family: the network namespace holds the host's network back, but
not every family is namespaced (AF_VSOCK reaches the hypervisor and its other guests). Traced
(strace -f) through a sandbox's start, a torch import, a load_inline build, torch.compile and
the timing, the only sockets under the filter are AF_UNIX (the C library's name-service
lookups; Python's multiprocessing uses them too); bubblewrap's own rtnetlink socket, which
brings up the loopback, comes before the filter. So AF_UNIX alone is allowed; every other
family, AF_INET/AF_INET6 (a loopback-only network: nothing to reach) and AF_NETLINK included
(the C library's address lookups go on without it), answers EACCES, an errno no kernel gives
for a family it lacks (that is EAFNOSUPPORT), so a refusal is the filter's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import socket

DENIED = (
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr", "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev",
    "process_madvise", "pidfd_getfd", "kcmp", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module",
    "delete_module", "kexec_load", "kexec_file_load", "open_by_handle_at", "name_to_handle_at", "swapon",
    "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "syslog", "iopl", "ioperm", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "vhangup", "uselib",
    "lookup_dcookie", "personality", "fanotify_init", "landlock_create_ruleset",
    "sched_setaffinity",  # the parent pins timed processes to the timing cores (devicelock.timing_cpus)
)
NAMESPACE_FLAGS = (0x00020000, 0x10000000, 0x20000000, 0x40000000, 0x04000000, 0x08000000, 0x02000000)
# CLONE_NEWNS, NEWUSER, NEWPID, NEWNET, NEWUTS, NEWIPC, NEWCGROUP
SOCKET_FAMILIES = (socket.AF_UNIX,)
FAMILY_REFUSED = errno.EACCES
FAMILY_LIMIT = 64  # above every family Linux defines (AF_MAX is 46); from here up each value is refused

_ALLOW = 0x7FFF0000
_CMP_EQ, _CMP_GE, _CMP_MASKED_EQ = 4, 5, 7


def _errno(value: int) -> int:
    return 0x00050000 | (value & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class SeccompUnavailable(RuntimeError):
    pass


_program: bytes | None = None


def _library():
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise SeccompUnavailable("libseccomp is not installed (Debian/Ubuntu: apt-get install libseccomp2); "
                                 "the sandbox needs it for its system-call filter") from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


def program() -> bytes:
    """The compiled BPF filter (built once per process)."""
    global _program
    if _program is None:
        _program = _build()
    return _program


def _build() -> bytes:
    lib = _library()
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        raise SeccompUnavailable("libseccomp could not create a filter")
    try:
        def rule(action: int, name: str, *cmps: _ArgCmp) -> None:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number < 0:  # not a call on this architecture or kernel headers: nothing to refuse
                return
            array = (_ArgCmp * len(cmps))(*cmps) if cmps else None
            code = lib.seccomp_rule_add_array(ctx, action, number, len(cmps), array)
            if code < 0:
                raise SeccompUnavailable(f"libseccomp refused the rule for {name}: {os.strerror(-code)}")

        for name in DENIED:
            rule(_errno(errno.EPERM), name)
        rule(_errno(errno.ENOSYS), "clone3")
        for flag in NAMESPACE_FLAGS:
            rule(_errno(errno.EPERM), "clone", _ArgCmp(0, _CMP_MASKED_EQ, flag, flag))
        # libseccomp takes one comparison per argument in a rule, so "none of the allowed families"
        # is a rule per other family, and one for every value from FAMILY_LIMIT up (the 64-bit
        # register: a family with high bits set is refused too, never truncated into an allowed one)
        for name in ("socket", "socketpair"):
            for family in range(FAMILY_LIMIT):
                if family not in SOCKET_FAMILIES:
                    rule(_errno(FAMILY_REFUSED), name, _ArgCmp(0, _CMP_EQ, family, 0))
            rule(_errno(FAMILY_REFUSED), name, _ArgCmp(0, _CMP_GE, FAMILY_LIMIT, 0))
        fd = os.memfd_create("kernellab-seccomp-build")
        try:
            code = lib.seccomp_export_bpf(ctx, fd)
            if code < 0:
                raise SeccompUnavailable(f"libseccomp could not export the filter: {os.strerror(-code)}")
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)


def program_fd() -> int:
    """A fresh memfd holding the filter, positioned at its start, for bubblewrap's --seccomp."""
    fd = os.memfd_create("kernellab-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
