"""The counter check: the driver's profiling restriction, read without privilege."""

import os

import pytest

from runner.common import counters, roofline

PARAMS = "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: {}\nEnableMSI: 1\n"


def test_admin_only_parsed():
    assert counters.admin_only(PARAMS.format(1)) is True
    assert counters.admin_only(PARAMS.format(0)) is False
    assert counters.admin_only("EnableMSI: 1\n") is None


def test_restricted_host_says_unavailable(tmp_path):
    params = tmp_path / "params"
    params.write_text(PARAMS.format(1))
    found = counters.status(params)
    assert not found["open"]
    assert found["note"].startswith(roofline.COUNTERS_UNAVAILABLE) and "admin users" in found["note"]


def test_open_counters_need_nsight_compute(tmp_path, monkeypatch):
    params = tmp_path / "params"
    params.write_text(PARAMS.format(0))
    monkeypatch.setattr(counters.shutil, "which", lambda name: None)
    assert "ncu) is not installed" in counters.status(params)["note"]
    monkeypatch.setattr(counters.shutil, "which", lambda name: "/usr/local/cuda/bin/ncu")
    assert counters.status(params) == {"open": True, "ncu": "/usr/local/cuda/bin/ncu", "note": counters.OPEN}


def test_missing_params_say_unavailable(tmp_path):
    found = counters.status(tmp_path / "absent")
    assert not found["open"] and "not readable" in found["note"]


def test_an_ncu_trial_is_read():
    refused = counters.read_trial(1, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                                     "NVIDIA GPU Performance Counters on the target device 0.")
    assert refused["open"] is False and refused["note"].startswith(roofline.COUNTERS_UNAVAILABLE)
    read = counters.read_trial(0, "  sm__cycles_elapsed.avg      cycle     3,412\n")
    assert read == {"open": True, "note": counters.OPEN}
    assert counters.read_trial(2, "==ERROR== no kernels were profiled")["open"] is None


@pytest.mark.gpu
def test_counter_check_on_this_gpu_host():
    """On the H200: the driver's parameters are readable and the check gives a definite answer."""
    assert os.path.exists(counters.PARAMS), "no /proc/driver/nvidia/params on a GPU host"
    found = counters.status()
    assert counters.admin_only(counters.PARAMS.read_text()) is not None
    assert found["note"] == counters.OPEN if found["open"] else found["note"].startswith(roofline.COUNTERS_UNAVAILABLE)
    # ncu on a trivial kernel as this test's user; the sandbox's own answer (an unprivileged uid) is
    # `python -m runner probe --device cuda`'s `counters.ncu_trial` (scripts/gpu_check.sh: sandbox-probe.json)
    trial = counters.ncu_trial()
    assert trial["open"] is not None, trial["note"]
    print("counter check:", found, "ncu trial:", trial)
