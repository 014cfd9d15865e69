"""The parent's handlers of a job's messages (runner/host/messages.py): one per kind the child sends, and
anything else a sandboxed child can write past the nonce check read on as noise, never an error in the
parent's reader."""

from runner.host import messages
from runner.host.devicelock import DeviceLock


class FakeSandbox:
    """What the handlers reach of a Sandbox, recording what the parent would send the child."""

    stdout, stderr = "out", "err"

    def __init__(self):
        self.sent, self.killed = [], False

    def send(self, message):
        self.sent.append(message)

    def kill(self):
        self.killed = True


def job(sandbox, **kwargs):
    return messages.Job(sandbox, {"job": "evaluate"}, "nonce", phase=lambda step: None, **kwargs)


def test_the_child_sends_only_the_kinds_the_table_answers():
    assert set(messages.Job.HANDLERS) == {"beat", "batch", "timing", "sample", "pair", "device", "verdict"}


def test_a_kind_outside_the_table_of_any_json_type_is_ignored():
    sandbox = FakeSandbox()
    run = job(sandbox)
    for kind in ("ready", "Verdict", "", None, 1, True, 2.5, ["verdict"], {"kind": "verdict"}):
        assert run.handle({"kind": kind, "nonce": "nonce", "result": {"status": "correct"}}) is None, kind
    assert run.handle({"nonce": "nonce"}) is None
    assert sandbox.sent == [] and not sandbox.killed and run.lock is None


def test_the_verdict_ends_the_run_with_an_object_only():
    sandbox = FakeSandbox()
    outcome = job(sandbox).handle({"kind": "verdict", "result": {"status": "correct"}})
    assert outcome.result == {"status": "correct"} and (outcome.stdout, outcome.stderr) == ("out", "err")
    for result in (None, [1], "correct", 3):
        assert job(sandbox).handle({"kind": "verdict", "result": result}).result == {}


def test_a_pairing_message_outside_a_pairing_is_ignored_and_a_second_device_request_answered_at_once():
    sandbox = FakeSandbox()
    run = job(sandbox)
    assert run.handle({"kind": "pair", "at": "ready"}) is None
    run.lock = held = DeviceLock("cuda")  # held alone: both kinds of ask have what they ask for
    for ask in ({"kind": "device"}, {"kind": "device", "untimed": True}):
        assert run.handle(ask) is None
    assert run.lock is held and sandbox.sent == [{"go": True}, {"go": True}]


class GpuSandbox(FakeSandbox):
    device, cgroups, threads = "cuda", None, 1


def test_untimed_work_holds_the_gpu_shared_and_asks_again_to_time_alone(monkeypatch):
    monkeypatch.setenv("KERNELLAB_DEVICE_SHARERS", "2")
    sandbox = GpuSandbox()
    run = job(sandbox)
    run.handle({"kind": "device", "untimed": True})
    shared = run.lock
    assert shared.shared and sandbox.sent == [{"go": True}]
    run.handle({"kind": "device"})  # the timing: the shared hold given up, the device alone
    assert run.lock is not shared and not run.lock.shared and sandbox.sent[-1] == {"go": True}
    run.lock.release()


def test_a_measurement_begun_under_a_shared_hold_takes_the_device_alone(monkeypatch):
    monkeypatch.setenv("KERNELLAB_DEVICE_SHARERS", "2")
    sandbox = GpuSandbox()
    sandbox.measurements = type("Readings", (), {"on_timing": staticmethod(lambda message: None)})()
    run = job(sandbox)
    run.handle({"kind": "device", "untimed": True})  # a child that never asks to time, yet measures
    run.handle({"kind": "timing", "what": "candidate", "at": "begin"})
    assert not run.lock.shared
    run.lock.release()


def test_an_evaluation_run_again_for_memory_never_shares(monkeypatch):
    monkeypatch.setenv("KERNELLAB_DEVICE_SHARERS", "4")
    sandbox = GpuSandbox()
    run = messages.Job(sandbox, {"job": "evaluate", "alone": True}, "nonce", phase=lambda step: None)
    run.handle({"kind": "device", "untimed": True})
    assert not run.lock.shared
    run.lock.release()


def test_a_sample_seed_is_answered_from_the_secret_only():
    sandbox = FakeSandbox()
    job(sandbox).handle({"kind": "sample", "key": "out0"})
    job(sandbox, sample_secret=b"s" * 32).handle({"kind": "sample", "key": "out0"})
    assert sandbox.sent[0] == {"seed": None} and isinstance(sandbox.sent[1]["seed"], int)
