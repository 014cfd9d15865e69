"""Host shared memory between the sandboxes and the trusted judge (runner/common/exchange.py): tensors
written by a process that may not grow files, read back only as described and only within the
memory; an exchange its writer sealed first is refused."""

import fcntl
import os
import json
import subprocess
import sys

import pytest
import torch

from runner.common import exchange

WRITE_UNDER_A_FILE_SIZE_LIMIT = '''
import json, os, resource, sys, torch
from runner.common import exchange
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # 1 MB, as a sandbox's disk limit would be
writer = exchange.Writer(int(sys.argv[1]))
print(json.dumps(writer.put("big", torch.arange(1 << 20, dtype=torch.float32))))  # 4 MB
'''


@pytest.mark.slow
def test_a_sandbox_writes_past_its_file_size_limit_and_the_judge_reads_it_back():
    fd = exchange.create()
    done = subprocess.run([sys.executable, "-c", WRITE_UNDER_A_FILE_SIZE_LIMIT, str(fd)], pass_fds=[fd],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout.strip().splitlines()[-1])
    exchange.seal(fd)
    reader = exchange.Reader(fd)
    assert torch.equal(reader.tensor(entry, shape=[1 << 20], dtype="float32"), torch.arange(1 << 20, dtype=torch.float32))
    os.close(fd)


def test_entries_are_checked_against_the_memory():
    fd = exchange.create()
    entry = exchange.Writer(fd).put("x", torch.ones(4, 3, dtype=torch.float64))
    exchange.seal(fd)
    reader = exchange.Reader(fd)
    assert reader.tensor(entry).sum().item() == 12
    for broken, words in ((dict(entry, offset=exchange.SIZE), "outside"), (dict(entry, nbytes=8), "outside"),
                          (dict(entry, offset=1), "outside"), (dict(entry, dtype="object"), "dtype"),
                          (dict(entry, shape=[4, "3"]), "shape"), ("entry", "mapping")):
        with pytest.raises(exchange.Unusable, match=words):
            reader.tensor(broken)
    with pytest.raises(exchange.Unusable, match="shape"):
        reader.tensor(entry, shape=[3, 4])
    with pytest.raises(exchange.Unusable, match="dtype"):
        reader.tensor(entry, dtype="float32")
    os.close(fd)


def test_an_exchange_its_writer_sealed_or_grew_is_refused():
    fd = exchange.create()
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL)  # a sandbox keeping the parent from sealing
    with pytest.raises(exchange.Unusable, match="could not be sealed"):
        exchange.seal(fd)
    os.close(fd)
    grown = exchange.create()
    os.ftruncate(grown, exchange.MAX_BYTES + 4096)
    with pytest.raises(exchange.Unusable, match="larger than"):
        exchange.seal(grown)
    os.close(grown)


def test_a_sealed_exchange_can_no_longer_be_written():
    fd = exchange.create()
    exchange.Writer(fd).put("x", torch.ones(4))
    exchange.seal(fd)
    with pytest.raises(OSError):
        os.pwrite(fd, b"forged", 0)
    with pytest.raises(OSError):
        os.ftruncate(fd, 0)
    os.close(fd)
