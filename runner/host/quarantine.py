"""Implausible results: a correct kernel more than 10x faster than the faster of eager and
torch.compile, or faster than the floor its problem allows (the bytes it must move at the
device's measured bandwidth, or its FLOPs at the device's fastest matrix rate). Such a
result is kept but quarantined until a person looks at it."""

from __future__ import annotations

from ..common import ceilings

MAX_SPEEDUP = 10.0


def floor_ms(device: str, device_name: str | None, flops: int | None, min_bytes: int | None) -> float | None:
    return ceilings.floor_ms(ceilings.bound_for_quarantine(device, device_name), flops, min_bytes)


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
