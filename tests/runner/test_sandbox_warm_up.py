"""A GPU sandbox warms up in two parts: imports first, then (holding the device lock the parent
grants) its CUDA context. On this CPU-only machine the second part fails at once, which shows
the request was granted and the lock handed back when the process ended."""

import time

from runner import sandbox


def test_a_cuda_sandbox_asks_for_the_device_and_gives_it_back():
    box = sandbox.Sandbox("cuda")
    try:
        assert box.wait_ready(limit=120) is None  # no GPU here
    finally:
        box.kill()
        box.cleanup()
    # The child reached the CUDA step, which it only does once the parent granted the device.
    assert "CUDA is not available in this sandbox" in box.stderr
    lock = sandbox.DeviceLock("cuda")
    started = time.monotonic()
    lock.acquire()
    lock.release()
    assert time.monotonic() - started < 1.0  # released when the process ended
