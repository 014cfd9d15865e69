"""Implausible results: a correct kernel more than 10x faster than the faster of eager and
torch.compile, or faster than the floor its problem allows (the bytes it must move at the
device's measured bandwidth, or its FLOPs at the device's fastest matrix rate). Such a
result is kept but quarantined until a person looks at it."""

from __future__ import annotations

MAX_SPEEDUP = 10.0

# Measured ceilings (bytes/s, FLOP/s at the fastest matrix rate). H200: triton do_bench
# medians on the project's machine (copy 4.25 TB/s; FP32 51, TF32 353, BF16 677 TFLOP/s).
CEILINGS = {
    "H200": (4.25e12, 677e12),
    "H100": (3.35e12, 990e12),  # datasheet, until measured
}
# Unknown GPUs and CPUs get ceilings no real part reaches, so the floor never flags an
# honest kernel there; the 10x rule still applies.
UNKNOWN_GPU = (10e12, 2e15)
CPU = (1e12, 20e12)


def ceilings(device: str, device_name: str | None) -> tuple[float, float]:
    if device == "cpu":
        return CPU
    for key, values in CEILINGS.items():
        if key in (device_name or ""):
            return values
    return UNKNOWN_GPU


def floor_ms(device: str, device_name: str | None, flops: int | None, min_bytes: int | None) -> float | None:
    if not flops and not min_bytes:
        return None
    bandwidth, rate = ceilings(device, device_name)
    return max((min_bytes or 0) / bandwidth, (flops or 0) / rate) * 1000.0


def judge(median_ms: float, baseline: dict, floor: float | None) -> tuple[bool, str]:
    times = [t for t in (baseline.get("eager_ms"), baseline.get("compile_ms")) if t]
    if times and median_ms > 0:
        faster = min(times)
        speedup = faster / median_ms
        if speedup > MAX_SPEEDUP:
            return True, (f"{speedup:.1f}x faster than the faster baseline ({faster:.4g} ms); over "
                          f"{MAX_SPEEDUP:.0f}x needs a person's review")
    if floor is not None and median_ms < floor:
        return True, (f"{median_ms:.4g} ms is below the floor of {floor:.4g} ms (the problem's bytes at the "
                      "measured bandwidth or its FLOPs at the fastest matrix rate)")
    return False, ""
