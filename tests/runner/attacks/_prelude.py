# Shared by every attack problem: a valid problem module, defined only if the attack above
# it did not raise. The attack raises the error the sandbox answered with.
import ctypes
import errno
import os

LIBC = ctypes.CDLL(None, use_errno=True)


def check(result):
    if result == -1 or result is None:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result
