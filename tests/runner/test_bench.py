"""`python -m runner bench` on the CPU: the whole report and its table, the pool's bound among them."""

import pytest

from runner import bench


@pytest.mark.slow
def test_the_cpu_bench_reports_throughput_and_the_pools_bound():
    report = bench.run("cpu", candidates=2)
    throughput = report["throughput"]
    assert report["pool"] == 2  # a pool keeps at least the two sandboxes one evaluation takes
    assert throughput["candidates"] == 2 and throughput["per_minute"] > 0 and throughput["noisy"] == 0
    assert throughput["warm_up_s"] > 0
    assert throughput["pool_bound_per_minute"] == pytest.approx(2 / 2 / throughput["warm_up_s"] * 60)
    assert len(report["repeat_medians_ms"]) == 5 and report["repeat_spread"] >= 0
    text = bench.table(report)
    assert "the pool's bound" in text and f"{throughput['per_minute']:.1f} candidates/min" in text
