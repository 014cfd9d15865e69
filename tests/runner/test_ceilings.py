"""Device ceilings: the quarantine floor and the speed of light derived from them."""

import pytest

from runner.common import ceilings
from runner.host import quarantine

SOFTMAX_BYTES = 2 * 4096 * 65536 * 4  # read x once, write y once (fp32)
MATMUL_FLOPS = 2 * 4096 ** 3


def test_memory_bound_problem_on_the_h200():
    sol = ceilings.speed_of_light(device_name="NVIDIA H200", flops=0, min_bytes=SOFTMAX_BYTES,
                                  precision="fp32", median_ms=0.7007)
    assert sol["bound"] == "memory"
    assert sol["floor_ms"] == pytest.approx(SOFTMAX_BYTES / 4.25e12 * 1e3)  # 0.505 ms
    assert sol["fraction"] == pytest.approx(0.505 / 0.7007, rel=1e-3)
    assert sol["basis"] == "2.15 GB at 4.25 TB/s"


def test_compute_bound_problem_uses_the_kernels_precision():
    fp32 = ceilings.speed_of_light(device_name="NVIDIA H200", flops=MATMUL_FLOPS,
                                   min_bytes=3 * 4096 * 4096 * 4, precision="fp32", median_ms=3.0)
    tf32 = ceilings.speed_of_light(device_name="NVIDIA H200", flops=MATMUL_FLOPS,
                                   min_bytes=3 * 4096 * 4096 * 4, precision="tf32", median_ms=3.0)
    assert fp32["bound"] == tf32["bound"] == "compute"
    assert fp32["floor_ms"] == pytest.approx(MATMUL_FLOPS / 51e12 * 1e3)  # 2.69 ms
    assert tf32["floor_ms"] == pytest.approx(MATMUL_FLOPS / 353e12 * 1e3)
    assert "(fp32)" in fp32["basis"] and "(tf32)" in tf32["basis"]


def test_unknown_or_mixed_precision_takes_the_fastest_rate():
    for precision in (None, "mixed", "fp64"):
        sol = ceilings.speed_of_light(device_name="NVIDIA H200", flops=MATMUL_FLOPS, min_bytes=0,
                                      precision=precision, median_ms=3.0)
        assert sol["floor_ms"] == pytest.approx(MATMUL_FLOPS / 677e12 * 1e3) and "(fastest)" in sol["basis"]


def test_no_speed_of_light_without_known_ceilings_or_facts():
    facts = {"flops": MATMUL_FLOPS, "min_bytes": 1e9, "precision": "fp32", "median_ms": 1.0}
    assert ceilings.speed_of_light(device_name="NVIDIA RTX 6000", **facts) is None
    assert ceilings.speed_of_light(device_name="Intel(R) Xeon(R) CPU", **facts) is None
    assert ceilings.speed_of_light(device_name="NVIDIA H200", flops=0, min_bytes=0,
                                   precision="fp32", median_ms=1.0) is None
    assert ceilings.speed_of_light(device_name="NVIDIA H200", flops=1e9, min_bytes=0,
                                   precision="fp32", median_ms=None) is None


def test_quarantine_floor_uses_the_fastest_rate_and_generous_bounds_elsewhere():
    assert quarantine.floor_ms("cuda", "NVIDIA H200", MATMUL_FLOPS, 0) == pytest.approx(MATMUL_FLOPS / 677e12 * 1e3)
    assert quarantine.floor_ms("cuda", "NVIDIA H200", 0, SOFTMAX_BYTES) == pytest.approx(SOFTMAX_BYTES / 4.25e12 * 1e3)
    assert quarantine.floor_ms("cuda", "Some new GPU", 0, SOFTMAX_BYTES) == pytest.approx(SOFTMAX_BYTES / 10e12 * 1e3)
    assert quarantine.floor_ms("cpu", "", 0, 1e9) == pytest.approx(1.0)
    assert quarantine.floor_ms("cuda", "NVIDIA H200", None, None) is None
    flagged, why = quarantine.judge(0.4, {"eager_ms": 1.0, "compile_ms": 0.8},
                                    quarantine.floor_ms("cuda", "NVIDIA H200", 0, SOFTMAX_BYTES))
    assert flagged and "below the floor of 0.5053 ms" in why
