"""Tensors between processes through host shared memory: one memfd per sandbox, made by the
parent and inherited at spawn (CUDA IPC handles do not cross PID namespaces and would expose
whole allocator segments). The sandbox appends tensors and lists them (`entries`) in its
verdict; once the sandbox is gone the parent seals the memfd (no writing, growing or
shrinking any more) and hands it to the trusted judge (referee.py), which maps it read-only
and checks every entry against the file before reading it.

The parent's part (create, seal) is plain Python; the tensor parts import torch when used.
"""

from __future__ import annotations

import fcntl
import math
import mmap
import os
import warnings

ALIGN = 64
# The parent sizes each memfd up front, sparse (no memory until written): the sandbox then writes
# through mmap and never extends the file, which its RLIMIT_FSIZE (the disk limit) would refuse.
SIZE = 512 * 1024**3
MAX_BYTES = SIZE  # a sealed exchange larger than this is refused unread
MAX_ENTRIES = 4096
DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL


class Unusable(Exception):
    """An exchange or entry that cannot be read as announced: the message says why."""


def create() -> int:
    fd = os.memfd_create("kernellab-exchange", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, SIZE)
    return fd


def seal(fd: int) -> None:
    """Make the exchange immutable before the judge reads it; raises Unusable when a sandbox
    sealed it first (an honest one never does) or grew it past MAX_BYTES."""
    try:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except OSError as exc:
        raise Unusable(f"the exchange memory could not be sealed ({exc.strerror})") from None
    if os.fstat(fd).st_size > MAX_BYTES:
        raise Unusable(f"the exchange memory is larger than {MAX_BYTES // 1024**3} GiB")


class Writer:
    """Appends tensors to the memfd; `entries` describes each (key, offset, shape, dtype)."""

    def __init__(self, fd: int):
        self.fd, self.size, self.limit, self.entries = fd, 0, os.fstat(fd).st_size, []

    def put(self, key: str, tensor) -> dict:
        import torch

        tensor = tensor.detach()
        nbytes = tensor.numel() * tensor.element_size()
        offset = -(-self.size // mmap.PAGESIZE) * mmap.PAGESIZE
        self.size = offset + nbytes
        if self.size > self.limit:
            raise MemoryError(f"out of memory: the exchange holds {self.limit // 1024**3} GiB of outputs at most")
        entry = {"key": key, "offset": offset, "nbytes": nbytes, "shape": list(tensor.shape),
                 "dtype": str(tensor.dtype).replace("torch.", "")}
        if nbytes:
            # populated in one call rather than a fault per page on first touch
            region = mmap.mmap(self.fd, nbytes, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE, offset=offset)
            try:
                view = torch.frombuffer(region, dtype=tensor.dtype, count=tensor.numel()).view(tensor.shape)
                view.copy_(tensor)  # device -> host straight into the shared pages
                del view
            finally:
                region.close()
        self.entries.append(entry)
        return entry


class Reader:
    """The sealed memfd mapped read-only; `tensor(entry)` checks the entry against the file."""

    def __init__(self, fd: int):
        self.size = os.fstat(fd).st_size
        self.map = mmap.mmap(fd, self.size, prot=mmap.PROT_READ) if self.size else None

    def tensor(self, entry, *, shape=None, dtype: str | None = None):
        import torch

        if not isinstance(entry, dict):
            raise Unusable("an exchange entry is not a mapping")
        offset, nbytes, got_shape, got_dtype = (entry.get(k) for k in ("offset", "nbytes", "shape", "dtype"))
        if got_dtype not in DTYPES:
            raise Unusable(f"an exchange entry has dtype {str(got_dtype)[:20]!r}")
        if not (isinstance(got_shape, list) and len(got_shape) <= 16
                and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**40 for n in got_shape)):
            raise Unusable("an exchange entry has no valid shape")
        if shape is not None and list(shape) != got_shape:
            raise Unusable(f"an exchange entry has shape {tuple(got_shape)}, not {tuple(shape)}")
        if dtype is not None and dtype != got_dtype:
            raise Unusable(f"an exchange entry has dtype {got_dtype}, not {dtype}")
        torch_dtype = getattr(torch, got_dtype)
        count = math.prod(got_shape)
        size = count * torch.empty((), dtype=torch_dtype).element_size()
        if not (isinstance(offset, int) and isinstance(nbytes, int) and nbytes == size and 0 <= offset
                and offset + nbytes <= self.size and offset % ALIGN == 0):
            raise Unusable("an exchange entry lies outside the memory it names")
        if count == 0:
            return torch.empty(got_shape, dtype=torch_dtype)
        with warnings.catch_warnings():  # a read-only map, only ever read
            warnings.simplefilter("ignore", UserWarning)
            return torch.frombuffer(self.map, dtype=torch_dtype, count=count, offset=offset).view(got_shape)

    def close(self) -> None:
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:  # a tensor view still alive: the mapping goes with it
                pass
