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


# ncu --csv's details page: one row per (kernel, metric); the header as Nsight Compute writes it.
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def row(kernel_id: int, name: str, metric: str, unit: str, value: str) -> str:
    return (f'"{kernel_id}","4242","python3","127.0.0.1","{name}","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


NCU_OUTPUT = "\n".join([
    "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
    '==PROF== Profiling "softmax_rows" - 0: 0%....50%....100% - 9 passes',
    HEADER,
    row(0, "softmax_rows(const float *, float *, int)", "gpu__time_duration.sum", "usecond", "612.35"),
    row(0, "softmax_rows(const float *, float *, int)", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%",
        "88.41"),
    row(0, "softmax_rows(const float *, float *, int)", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%",
        "31.2"),
    row(0, "softmax_rows(const float *, float *, int)", "sm__warps_active.avg.pct_of_peak_sustained_active", "%",
        "71.9"),
    row(0, "softmax_rows(const float *, float *, int)",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "%", "0"),
    row(0, "softmax_rows(const float *, float *, int)",
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", "%", "0"),
    row(0, "softmax_rows(const float *, float *, int)",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "ratio", "9.81"),
    row(0, "softmax_rows(const float *, float *, int)",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "ratio", "1.2"),
    row(0, "softmax_rows(const float *, float *, int)",
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "ratio", "0.4"),
    row(0, "softmax_rows(const float *, float *, int)",
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", "ratio", "2.5"),
    row(1, "fill_kernel", "gpu__time_duration.sum", "nsecond", "3,104"),
    row(1, "fill_kernel", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "n/a"),
    "==PROF== Disconnected from process 4242",
])


def test_a_counter_profile_is_read_from_ncus_csv():
    read = counters.read_profile(0, NCU_OUTPUT)
    assert read["status"] == "ok"
    softmax, fill = read["kernels"]  # the longest first
    assert softmax["name"].startswith("softmax_rows") and softmax["duration_us"] == pytest.approx(612.35)
    assert (softmax["dram_pct"], softmax["sm_pct"], softmax["occupancy_pct"]) == (88.41, 31.2, 71.9)
    assert softmax["tensor_pct"] == {"hmma": 0.0, "gmma": 0.0}
    assert softmax["stalls"] == [("long_scoreboard", 9.81), ("math_pipe_throttle", 2.5), ("barrier", 1.2)]
    assert fill["duration_us"] == pytest.approx(3.104) and "sm_pct" not in fill  # "n/a" is no number
    text = counters.profile_text(read)
    assert text.startswith("Nsight Compute") and "DRAM 88% of peak" in text and "long_scoreboard 9.8" in text
    assert "tensor pipes gmma 0%, hmma 0%" in text


def test_a_refused_or_failed_counter_profile_says_why():
    refused = counters.read_profile(1, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission")
    assert refused["status"] == "unavailable"
    assert counters.profile_text(refused).startswith(roofline.COUNTERS_UNAVAILABLE)
    failed = counters.read_profile(-1, "Nsight Compute (ncu) is not on the sandbox's PATH")
    assert failed["status"] == "failed" and "not on the sandbox's PATH" in counters.profile_text(failed)
    assert counters.read_profile(0, HEADER + "\n==WARNING== No kernels were profiled.")["status"] == "failed"
