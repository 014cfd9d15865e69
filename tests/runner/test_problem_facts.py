"""Problem facts read off the reference: the op family and the FLOPs the output needs, and the
speed of light derived from them."""

import pytest

from runner import ceilings


# --- speed of light -----------------------------------------------------------------------------

def test_speed_of_light_says_when_its_flops_are_an_upper_bound():
    flops = 4096 * 4097 * 4098 // 3
    exact = ceilings.speed_of_light(device_name="NVIDIA H200", flops=flops, min_bytes=3 * 4096 ** 2 * 4,
                                    precision="fp32", median_ms=1.0)
    bound = ceilings.speed_of_light(device_name="NVIDIA H200", flops=flops, min_bytes=3 * 4096 ** 2 * 4,
                                    precision="fp32", median_ms=1.0, flops_upper_bound=True)
    assert exact["upper_bound"] is False and bound["upper_bound"] is True
    assert bound["basis"].startswith("at most 22.9 GFLOP") and not exact["basis"].startswith("at most")
    assert exact["fraction"] == bound["fraction"] == pytest.approx(flops / 51e12 * 1e3 / 1.0)
    assert exact["exceeds_floor"] is False


def test_a_time_below_the_floor_never_reads_as_plain():
    written = 2 * 4096 ** 3  # the triu problem counted as written, and a 1 ms kernel: 269%
    sol = ceilings.speed_of_light(device_name="NVIDIA H200", flops=written, min_bytes=0, precision="fp32",
                                  median_ms=1.0)
    assert sol["fraction"] == pytest.approx(2.69, rel=1e-2)
    assert sol["exceeds_floor"] is True and "beat this floor" in sol["basis"]
    at_floor = ceilings.speed_of_light(device_name="NVIDIA H200", flops=written, min_bytes=0, precision="fp32",
                                       median_ms=sol["floor_ms"])
    assert at_floor["exceeds_floor"] is False
