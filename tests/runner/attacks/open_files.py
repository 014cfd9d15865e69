# Open files until refused, in eight processes at once: each open file is an entry of the host's
# file table (fs.file-max), which the database and every other process share. Each process stops
# at 5,000 of its own accord so that a host without the limit is not exhausted by the test; the
# children hold theirs while this process opens until refused.
import subprocess
import sys
import time

HOLD = """
import os, sys, time
held = []
while len(held) < 5000:
    try:
        held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError as exc:
        print(exc, file=sys.stderr, flush=True)
        break
print(len(held), flush=True)
time.sleep(4)
"""
children = [subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE) for _ in range(8)]
held = [int(child.stdout.readline() or 0) for child in children]
mine = []
while len(mine) < 5000:
    mine.append(os.open("/dev/null", os.O_RDONLY))  # the refusal (EMFILE) is the attack's error
time.sleep(4)
