"""The no-privilege profile's arithmetic: occupancy, achieved rates, the bottleneck label."""

import pytest

from runner.common import roofline

H200 = {"name": "NVIDIA H200", "sm_count": 132, "warp_size": 32, "max_threads_per_sm": 2048,
        "registers_per_sm": 65536, "shared_mem_per_sm": 233472}
SOFTMAX_BYTES = 2 * 4096 * 65536 * 4


def test_occupancy_limited_by_registers():
    # 128 registers x 256 threads = 32768 registers a block: two blocks, 16 of 64 warps
    occ = roofline.occupancy(threads=256, registers=128, shared=0, device=H200)
    assert occ == {"fraction": 0.25, "blocks_per_sm": 2, "limiter": "registers"}


def test_occupancy_limited_by_shared_memory():
    # 100 KB + the 1 KB the driver reserves: two blocks of 4 warps in 64
    occ = roofline.occupancy(threads=128, registers=32, shared=100 * 1024, device=H200)
    assert occ["limiter"] == "shared memory" and occ["blocks_per_sm"] == 2
    assert occ["fraction"] == pytest.approx(8 / 64)


def test_full_occupancy_and_unknowns():
    assert roofline.occupancy(threads=256, registers=32, shared=0, device=H200)["fraction"] == 1.0
    assert roofline.occupancy(threads=256, registers=None, shared=0, device=H200) is None
    assert roofline.occupancy(threads=256, registers=32, shared=0, device={}) is None


def test_memory_bound_kernel_on_the_h200():
    rates = roofline.achieved(median_ms=0.6, flops=None, min_bytes=SOFTMAX_BYTES, device_name="NVIDIA H200",
                              precision="fp32")
    assert rates["bandwidth_gbs"] == pytest.approx(SOFTMAX_BYTES / 0.6e-3 / 1e9)
    assert rates["bandwidth_fraction"] == pytest.approx(SOFTMAX_BYTES / 0.6e-3 / 4.25e12)
    label, why = roofline.bottleneck(median_ms=0.6, rates=rates, occupancy_fraction=1.0)
    assert label == "memory-bound" and "84% of the measured bandwidth" in why


def test_compute_bound_uses_the_precision_rate():
    flops = 2 * 4096 ** 3
    rates = roofline.achieved(median_ms=0.3, flops=flops, min_bytes=3 * 4096 * 4096 * 2,
                              device_name="NVIDIA H200", precision="bf16")
    assert rates["compute_fraction"] == pytest.approx(flops / 0.3e-3 / 677e12)
    assert roofline.bottleneck(median_ms=0.3, rates=rates, occupancy_fraction=0.5)[0] == "compute-bound"


def test_far_from_both_ceilings():
    slow = {"bandwidth_fraction": 0.05, "compute_fraction": 0.01}
    assert roofline.bottleneck(median_ms=0.005, rates=slow, occupancy_fraction=1.0)[0] == "latency- or launch-bound"
    label, why = roofline.bottleneck(median_ms=2.0, rates=slow, occupancy_fraction=0.125)
    assert label == "occupancy-limited" and "12%" in why
    label, why = roofline.bottleneck(median_ms=2.0, rates=slow, occupancy_fraction=1.0, waves=0.25)
    assert label == "latency- or launch-bound" and "25% of the SMs" in why


def test_cpu_profile_reports_rates_without_ceilings():
    prof = roofline.profile(device="cpu", kernels=None, device_facts={"device": "cpu"}, median_ms=2.0,
                            flops=4e9, min_bytes=2e9, precision="fp32")
    assert prof["bandwidth_gbs"] == pytest.approx(1000.0) and prof["tflops"] == pytest.approx(2.0)
    assert prof["bandwidth_fraction"] is None and prof["bottleneck"] is None
    assert "perf_event_open" in prof["counters"]


def test_gpu_profile_rows_longest_first():
    kernels = [{"name": "tail", "registers": 16, "shared_bytes": 0, "block": [128, 1, 1],
                "grid": [4, 1, 1], "time_share": 0.1},
               {"name": "main", "registers": 128, "shared_bytes": 0, "block": [256, 1, 1],
                "grid": [4096, 1, 1], "time_share": 0.9}]
    prof = roofline.profile(device="cuda", kernels=kernels, device_facts=H200, median_ms=1.0, flops=None,
                            min_bytes=1e8, precision="fp32")
    assert [k["name"] for k in prof["kernels"]] == ["main", "tail"]
    assert prof["occupancy"] == 0.25 and prof["kernels"][0]["occupancy_limiter"] == "registers"
    assert prof["kernels"][0]["waves"] == pytest.approx(4096 / (132 * 2))
    assert prof["bottleneck"] == "latency- or launch-bound"  # 100 MB in 1 ms is 2% of the bandwidth
    assert prof["counters"] == roofline.COUNTERS_UNAVAILABLE


def test_the_cli_summary_states_the_profile():
    from runner.cli import summary

    prof = roofline.profile(device="cpu", kernels=None, device_facts={}, median_ms=2.0, flops=None, min_bytes=2e9,
                            precision="fp32")
    text = summary({"status": "correct", "profile": prof})
    assert "profile: no bottleneck inferred (no measured ceilings for this device" in text
    assert "perf_event_open stays refused" in text


def test_counters_relabel_a_kernel_that_moves_more_than_it_must():
    # the starting softmax of a search on the H100: 34% of the minimum traffic's rate, DRAM 69% busy
    prof = {"bandwidth_fraction": 0.34, "compute_fraction": 0.0, "bottleneck": "latency- or launch-bound",
            "why": "neither memory nor compute is near its ceiling"}
    roofline.with_counters(prof, [{"name": "softmax_rows", "dram_pct": 69.0, "sm_pct": 29.0}])
    assert prof["bottleneck"] == "memory-bound"
    assert "DRAM 69% busy" in prof["why"] and "only 34% of the measured bandwidth" in prof["why"]


def test_counters_relabel_an_issue_bound_kernel():
    prof = {"bandwidth_fraction": 0.1, "compute_fraction": 0.05, "bottleneck": "occupancy-limited", "why": "w"}
    roofline.with_counters(prof, [{"name": "k", "dram_pct": 12.0, "sm_pct": 81.0}])
    assert prof["bottleneck"] == "compute-bound" and "SMs 81% busy" in prof["why"] and "5%" in prof["why"]


def test_counters_leave_a_settled_or_idle_label_alone():
    bound = {"bandwidth_fraction": 0.8, "bottleneck": "memory-bound", "why": "it moves the bytes at 80%"}
    roofline.with_counters(bound, [{"name": "k", "dram_pct": 20.0, "sm_pct": 90.0}])
    assert bound["bottleneck"] == "memory-bound" and bound["why"] == "it moves the bytes at 80%"
    idle = {"bandwidth_fraction": 0.1, "bottleneck": "latency- or launch-bound", "why": "w"}
    roofline.with_counters(idle, [{"name": "k", "dram_pct": 30.0, "sm_pct": 20.0}])
    roofline.with_counters(idle, [])
    assert idle["bottleneck"] == "latency- or launch-bound"
