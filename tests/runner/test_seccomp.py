"""The sandbox's system-call filter (runner/host/seccomp.py), loaded into a child process of its own:
which socket families it lets through, and the errno it answers the others with."""

import errno
import json
import socket
import subprocess
import sys
from pathlib import Path

from runner.host import seccomp

ROOT = Path(__file__).resolve().parents[2]

# Loads the filter (no_new_privs first, as bubblewrap does), then creates one socket of each
# family asked for through the raw system call, so that the value reaches the filter as given.
UNDER_THE_FILTER = r'''
import ctypes, json, sys
from runner.host import seccomp
libc = ctypes.CDLL(None, use_errno=True)
program = seccomp.program()
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(Program(len(program) // 8, program)), 0, 0) == 0  # SECCOMP_MODE_FILTER
answers = {}
for family, kind in json.loads(sys.argv[1]):
    fd = libc.syscall(41, ctypes.c_long(family), ctypes.c_long(kind), ctypes.c_long(0))  # socket
    answers[str(family)] = 0 if fd >= 0 else ctypes.get_errno()
pair = (ctypes.c_int * 2)()
answers["socketpair_inet"] = 0 if libc.syscall(53, 2, 1, 0, pair) == 0 else ctypes.get_errno()  # AF_INET
answers["socketpair_unix"] = 0 if libc.syscall(53, 1, 1, 0, pair) == 0 else ctypes.get_errno()  # AF_UNIX
print(json.dumps(answers))
'''

RAW = 3  # SOCK_RAW, what netlink takes


def _answers(families: list[tuple[int, int]]) -> dict:
    done = subprocess.run([sys.executable, "-c", UNDER_THE_FILTER, json.dumps(families)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_only_the_allowed_socket_families_pass_the_filter():
    stream = socket.SOCK_STREAM
    answers = _answers([(socket.AF_UNIX, stream), (socket.AF_NETLINK, RAW), (socket.AF_INET, stream),
                        (socket.AF_INET6, stream), (socket.AF_VSOCK, stream), (socket.AF_PACKET, RAW),
                        (seccomp.FAMILY_LIMIT + 3, stream),
                        ((1 << 32) | socket.AF_VSOCK, stream), ((1 << 32) | socket.AF_UNIX, stream)])
    assert answers.pop(str(socket.AF_UNIX)) == 0
    assert answers.pop("socketpair_unix") == 0
    # EACCES, which no kernel gives for a family it lacks (EAFNOSUPPORT): a host without vsock
    # cannot pass this by accident. A family with high bits set is refused, not truncated.
    assert answers == {key: errno.EACCES for key in answers}, answers

