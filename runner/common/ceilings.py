"""What a device can do at best: memory bandwidth and dense matrix rates per precision.

Two uses: the quarantine floor (a result faster than the problem's bytes at the bandwidth, or
its FLOPs at the fastest rate, is implausible) and "% of speed of light" (the same floor at the
rate of the precision the kernel computes in, over its measured time)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ceilings:
    name: str
    bandwidth: float  # bytes/s
    rates: dict[str, float]  # precision -> FLOP/s
    source: str

    @property
    def fastest(self) -> float:
        return max(self.rates.values())

    def rate(self, precision: str | None) -> float:
        """The rate for a precision; the fastest when it is unknown or mixed, so a speed of
        light computed from it never flatters a kernel."""
        return self.rates.get(precision or "", self.fastest)


# Keyed by a substring of the device name torch reports.
KNOWN = {
    "H200": Ceilings("H200", 4.25e12, {"fp32": 51e12, "tf32": 353e12, "bf16": 677e12, "fp16": 677e12},
                     "measured on the project's H200 (triton do_bench medians: device copy, cuBLAS matmul; "
                     "fp16 taken equal to bf16, the same tensor-core rate on Hopper)"),
    "H100": Ceilings("H100", 3.35e12, {"fp32": 67e12, "tf32": 495e12, "bf16": 990e12, "fp16": 990e12},
                     "NVIDIA H100 SXM datasheet, until measured"),
}
# Unknown GPUs and CPUs: values no real part reaches, so the quarantine floor never flags an
# honest kernel there (the 10x rule still applies); no speed of light is shown for them.
UNKNOWN_GPU = Ceilings("unknown GPU", 10e12, {"any": 2e15}, "a bound above any current GPU")
CPU = Ceilings("CPU", 1e12, {"any": 20e12}, "a bound above any current CPU")


def measured(device_name: str | None) -> Ceilings | None:
    """The ceilings of a known GPU model, or None (CPUs included)."""
    for key, ceilings in KNOWN.items():
        if key in (device_name or ""):
            return ceilings
    return None


def bound_for_quarantine(device: str, device_name: str | None) -> Ceilings:
    if device == "cpu":
        return CPU
    return measured(device_name) or UNKNOWN_GPU


def floor_ms(ceilings: Ceilings, flops: float | None, min_bytes: float | None, precision: str | None = None) -> float | None:
    """The least time the problem's bytes and FLOPs allow on this device, in ms; None without either."""
    if not flops and not min_bytes:
        return None
    return max((min_bytes or 0) / ceilings.bandwidth, (flops or 0) / ceilings.rate(precision)) * 1000.0


def speed_of_light(*, device_name: str | None, flops: float | None, min_bytes: float | None,
                   precision: str | None, median_ms: float | None, flops_upper_bound: bool = False) -> dict | None:
    """How close a measured time is to the floor on a known device: fraction = floor / time.

    `flops_upper_bound`: the problem's FLOPs may count work its output does not need (see
    runner.common.facts.flop_facts), so a compute-bound floor, and the fraction, may be too high: the
    result says so ("upper_bound"). A fraction above 1 is never shown as plain: "exceeds_floor"
    says the time beat the floor, and the basis says why that can happen."""
    ceilings = measured(device_name)
    if ceilings is None or not median_ms:
        return None
    memory_ms = (min_bytes or 0) / ceilings.bandwidth * 1000.0
    compute_ms = (flops or 0) / ceilings.rate(precision) * 1000.0
    floor = max(memory_ms, compute_ms)
    if floor <= 0:
        return None
    bound = "memory" if memory_ms >= compute_ms else "compute"
    if bound == "memory":
        basis = f"{(min_bytes or 0) / 1e9:.3g} GB at {ceilings.bandwidth / 1e12:.3g} TB/s"
    else:
        rate = ceilings.rate(precision)
        label = precision if precision in ceilings.rates else "fastest"
        basis = f"{(flops or 0) / 1e9:.3g} GFLOP at {rate / 1e12:.3g} TFLOP/s ({label})"
        if flops_upper_bound:
            basis = "at most " + basis + " (the FLOP count may include work the output does not need)"
    upper_bound = bool(flops_upper_bound) and bound == "compute"
    fraction = floor / median_ms
    exceeds = fraction > 1.0 + 1e-9  # not a rounding error of a time equal to the floor
    if exceeds:
        basis += ("; the time beat this floor: the FLOP count overstates the work" if upper_bound else
                  "; the time beat this floor: the work counted or the device's rate is wrong, or the kernel "
                  "computes at a faster precision than the one recorded")
    return {"fraction": fraction, "floor_ms": floor, "bound": bound, "basis": basis, "upper_bound": upper_bound,
            "exceeds_floor": exceeds, "device": ceilings.name, "source": ceilings.source}
