"""What the parent does with each kind of message a sandbox's child sends during a job: one handler per
kind, in one table (`Job.HANDLERS`). Sandbox.run reads the messages and hands each one here only after
its own checks, in this order: the reader bounded the line's size and nesting (schema.message), the
message is a JSON object, and it carries the job's nonce. A handler trusts nothing else of it: what
it reads of the message it checks, or passes on to code that does (the batch clock, the pairing, the
call limit, gpustate). A kind not in the table is ignored, as a line that is not JSON is.

A handler answers None to read on, or the run's outcome to end it."""

from __future__ import annotations

import time

from ..common import compile as compiling
from ..common import procs, sampling
from .devicelock import DeviceLock, timing_cpus


class SandboxOutcome:
    """What came back from one run: the verdict dict, or why there is none."""

    def __init__(self, result=None, status=None, reason="", stdout="", stderr="", seconds=0.0, started=True):
        self.result, self.status, self.reason = result, status, reason
        self.stdout, self.stderr, self.seconds = stdout, stderr, seconds
        self.started = started  # False: the sandbox never got warm, so no job's code ran in it


class Job:
    """One job's side of the conversation with the sandbox that runs it (Sandbox.run): its nonce, its
    deadline (moved on by time spent waiting for the device or the pairing), its call limit, and the
    device lock once granted, which Sandbox.run releases at the end whatever happens."""

    def __init__(self, sandbox, job: dict, nonce: str, phase, sample_secret: bytes | None = None, pairing=None):
        self.sandbox, self.job, self.nonce, self.phase = sandbox, job, nonce, phase
        self.sample_secret, self.pairing = sample_secret, pairing
        self.began = self.deadline = 0.0
        self.calls = None  # watchdog.CallLimit, once the job is sent
        self.lock = None

    def handle(self, message: dict) -> SandboxOutcome | None:
        """`message`: a dict carrying the job's nonce. Its kind may be any JSON value: only a string
        names a handler (a list or an object would not even hash)."""
        kind = message.get("kind")
        handler = self.HANDLERS.get(kind) if isinstance(kind, str) else None
        return handler(self, message) if handler is not None else None

    # --- the ends of a run ----------------------------------------------------------------------

    def stopped(self, reason: str) -> SandboxOutcome:
        sandbox = self.sandbox
        sandbox.kill()
        return SandboxOutcome(status="timeout", reason=reason, stdout=sandbox.stdout, stderr=sandbox.stderr,
                              seconds=time.monotonic() - self.began)

    def refused(self, why: str) -> SandboxOutcome:
        """A line the reader refused unread (schema.Refused): the run ends on it at once."""
        return SandboxOutcome(status="rejected", reason="the sandbox sent a malformed message on the "
                              f"verdict channel ({why}); the run was stopped", stdout=self.sandbox.stdout,
                              stderr=self.sandbox.stderr, seconds=time.monotonic() - self.began)

    # --- one handler per kind ---------------------------------------------------------------------

    def on_beat(self, message: dict) -> SandboxOutcome | None:
        self.calls.beat(message, time.monotonic())
        if overdue := self.calls.overdue(time.monotonic()):
            return self.stopped(overdue)
        return None

    def on_batch(self, message: dict) -> None:
        """The batch clock's side of the run (batchclock.py), the GPU's state read around it; once the
        clock is done, further batch messages are ignored."""
        sandbox = self.sandbox
        if sandbox.batches.done:
            return
        self.alone()
        first = sandbox.batches.claimed is None
        if first:
            sandbox.measurements.on_timing({"what": "batch", "at": "begin"})
        now = time.monotonic()
        read = sandbox.cpu_seconds()
        reply = sandbox.batches.on_message(message, now, *(read or (None, None)))
        if reply is not None and reply.get("batch"):
            if sandbox.batches.pause_s:
                time.sleep(sandbox.batches.pause_s)
                read = sandbox.cpu_seconds()
            sandbox.batches.sending(time.monotonic(), *(read or (None, None)))
        if reply is not None:
            if sandbox.batches.done and not first:
                sandbox.measurements.on_timing({"what": "batch", "at": "end"})
            sandbox.send(reply)

    def on_timing(self, message: dict) -> None:
        self.phase("timing")
        self.alone()
        reply = self.sandbox.measurements.on_timing(message)
        if reply is not None:
            self.sandbox.send(reply)

    def on_sample(self, message: dict) -> None:
        """The seed of an output's sample (sampling.py): None where the job has no secret."""
        self.sandbox.send({"seed": None if self.sample_secret is None
                           else sampling.seed_for(self.sample_secret, str(message.get("key")))})

    def on_pair(self, message: dict) -> None:
        """Only in a paired evaluation on the CPU (pairing.py); ignored elsewhere."""
        if self.pairing is not None:
            self.deadline, self.lock = self.pairing.handle(self.sandbox, self.job["job"], message, self.nonce,
                                                           self.deadline, self.lock)

    def on_device(self, message: dict) -> None:
        """The child asks for the device, `untimed` for work it will not time (devicelock.py: shared on
        a GPU), else to time. Asked to time while it holds the device shared, it gives that up and waits
        for the device alone; any other second ask is answered at once (it holds what it asks for). The
        waits do not count against the job's time. After an evaluation ran out of memory beside others
        (`alone` in the job), it never shares."""
        shared = message.get("untimed") is True and not self.job.get("alone")
        sandbox = self.sandbox
        if self.lock is not None:
            if self.lock.shared and not shared:
                self.phase("device")
                self.alone()
                self.phase("go")
            sandbox.send({"go": True})
            return
        self.phase("device")
        waited = time.monotonic()
        if self.pairing is not None and self.job["job"] == "evaluate":  # after the truths are made
            self.pairing.ready.wait(max(0.0, self.deadline - waited))
        self.lock = DeviceLock(sandbox.device, shared=shared).acquire()
        self.deadline += time.monotonic() - waited
        compiling.promote(sandbox.cgroups)  # build priority: the GPU phases run at normal priority
        if sandbox.device == "cpu":
            procs.pin(sandbox.pids(), timing_cpus(sandbox.threads))
        sandbox.send({"go": True})
        self.phase("go")

    def alone(self) -> None:
        """The device alone from here on, for a child that holds it shared: it asked to time, or a measurement
        begins without that ask (which the runner's code makes); what it measured meanwhile, beside others'
        work, the GPU's readings call disturbed."""
        if self.lock is not None and self.lock.shared:
            waited = time.monotonic()
            self.lock.release()
            self.lock = DeviceLock(self.sandbox.device).acquire()
            self.deadline += time.monotonic() - waited

    def on_verdict(self, message: dict) -> SandboxOutcome:
        """The run's verdict, ending it; schema.evaluation checks its contents afterwards."""
        result = message.get("result")
        return SandboxOutcome(result=result if isinstance(result, dict) else {}, stdout=self.sandbox.stdout,
                              stderr=self.sandbox.stderr, seconds=time.monotonic() - self.began)

    HANDLERS = {"beat": on_beat, "batch": on_batch, "timing": on_timing, "sample": on_sample, "pair": on_pair,
                "device": on_device, "verdict": on_verdict}
