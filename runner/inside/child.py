"""The sandbox process: warm up (torch imported, CUDA initialised), wait for one job on the
control pipe, run it, send the verdict on the verdict pipe, exit. Never reused.

The verdict pipe is not stdout: what the candidate prints is captured separately and
cannot pass for a verdict. Each message carries the job's nonce, which arrives on the
control pipe before any candidate code is imported.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

from ..common.lifeline import die_with_parent


class Channel:
    def __init__(self, control_fd: int, verdict_fd: int):
        self._control = os.fdopen(control_fd, "r", encoding="utf-8")
        self._verdict_fd = verdict_fd
        self._write = os.write  # captured before candidate code exists
        self.nonce = ""

    def send(self, kind: str, **payload) -> None:
        message = json.dumps({"kind": kind, "nonce": self.nonce, **payload}, default=str) + "\n"
        data = message.encode()
        while data:
            data = data[self._write(self._verdict_fd, data):]

    def receive(self) -> dict:
        line = self._control.readline()
        if not line:  # the parent went away without a job for us: leave nothing behind
            shutil.rmtree(os.environ.get("KERNELLAB_SANDBOX_ROOT", ""), ignore_errors=True)
            raise SystemExit(0)
        return json.loads(line)

    def request_device(self, untimed: bool = False) -> None:
        """Ask the parent for the device and wait: alone, to time on it, or for `untimed` work, which
        on a GPU may share it with other untimed work (runner/host/devicelock.py)."""
        self.send("device", **({"untimed": True} if untimed else {}))
        self.receive()


def main() -> None:
    control_fd, verdict_fd, device, exchange_fd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    die_with_parent()
    channel = Channel(control_fd, verdict_fd)
    from ..common.compile import make_cache_dirs

    make_cache_dirs()
    from . import jobs, machine  # imports torch (the warm-up)

    environment = machine.warm_up(device)
    channel.send("ready", environment=environment)
    job = channel.receive()
    channel.nonce = job.get("nonce", "")
    if job.get("job") == "truths":  # the problem's own sandbox: the truths for the trusted judge
        from . import truths

        result = truths.run(job, channel, exchange_fd)
    elif job.get("job") == "validate":
        from . import validation

        result = validation.run(job, channel, environment)
    else:
        result = jobs.run(job, channel, environment, exchange_fd)
    channel.send("verdict", result=result)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown (and any candidate atexit hooks)


if __name__ == "__main__":
    main()
