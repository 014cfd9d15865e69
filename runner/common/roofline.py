"""The no-privilege profile of a correct kernel: its build's resources, theoretical occupancy,
achieved bandwidth and FLOP rate against the device's measured ceilings, and a bottleneck label.

Pure arithmetic over facts gathered elsewhere (the build's attributes in runner/inside/kernelattrs.py,
the device's limits in runner/host/devicefacts.py, the problem's bytes and FLOPs in runner/common/facts.py),
so it is tested on the CPU and imports neither torch nor cupy."""

from __future__ import annotations

from . import ceilings

COUNTERS_UNAVAILABLE = "counter profile unavailable on this host"
CPU_COUNTERS = "no hardware counters on the CPU: perf_event_open stays refused in the sandbox"
# Per-SM limits the device facts do not carry, as on sm_80 and sm_90 (sm_86 and sm_89 keep 16 and 24 blocks).
MAX_BLOCKS_PER_SM = 32
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256
SHARED_RESERVED = 1024  # bytes the driver keeps per block (sm_80 and later)
SHARED_UNIT = 128
# Below this a kernel's time is mostly launch and tail latency, whatever its arithmetic.
LAUNCH_BOUND_MS = 0.02
NEAR_CEILING = 0.5  # a pipe at half its ceiling or more is the one that binds
LOW_OCCUPANCY = 0.25


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(*, threads: int | None, registers: int | None, shared: int | None, device: dict) -> dict | None:
    """Theoretical occupancy (resident warps / the SM's most) of a block shape, and what limits it."""
    warp, max_threads = device.get("warp_size") or 32, device.get("max_threads_per_sm")
    if not threads or registers is None or shared is None or not max_threads:
        return None
    warps = -(-threads // warp)
    limits = {"blocks": MAX_BLOCKS_PER_SM, "threads": max_threads // (warps * warp)}
    if registers and device.get("registers_per_sm"):
        limits["registers"] = device["registers_per_sm"] // (_round_up(registers * warp, REGISTER_UNIT) * warps)
    if device.get("shared_mem_per_sm"):
        per_block = _round_up(shared + SHARED_RESERVED, SHARED_UNIT)
        limits["shared memory"] = device["shared_mem_per_sm"] // per_block
    limiter = min(limits, key=limits.get)
    blocks = limits[limiter]
    return {"fraction": min(1.0, blocks * warps * warp / max_threads), "blocks_per_sm": blocks, "limiter": limiter}


def achieved(*, median_ms: float | None, flops: float | None, min_bytes: float | None,
             device_name: str | None, precision: str | None) -> dict:
    """Bytes and FLOPs per second at the runner's median; their share of the measured ceilings
    where the device has them (None elsewhere, CPUs included: no host ceilings are measured)."""
    seconds = (median_ms or 0) / 1000.0
    rates = {"bandwidth_gbs": min_bytes / seconds / 1e9 if seconds and min_bytes else None,
             "tflops": flops / seconds / 1e12 if seconds and flops else None,
             "bandwidth_fraction": None, "compute_fraction": None}
    known = ceilings.measured(device_name)
    if known is not None:
        if rates["bandwidth_gbs"] is not None:
            rates["bandwidth_fraction"] = rates["bandwidth_gbs"] * 1e9 / known.bandwidth
        if rates["tflops"] is not None:
            rates["compute_fraction"] = rates["tflops"] * 1e12 / known.rate(precision)
    return rates


def bottleneck(*, median_ms: float | None, rates: dict, occupancy_fraction: float | None,
               waves: float | None = None) -> tuple[str | None, str]:
    """A label and one sentence why, from the fractions of the ceilings reached."""
    memory, compute = rates.get("bandwidth_fraction"), rates.get("compute_fraction")
    if memory is None and compute is None:
        return None, "no measured ceilings for this device, so no bottleneck is inferred"
    memory, compute = memory or 0.0, compute or 0.0
    if max(memory, compute) >= NEAR_CEILING:
        if memory >= compute:
            return "memory-bound", f"it moves the problem's bytes at {memory:.0%} of the measured bandwidth"
        return "compute-bound", f"it computes at {compute:.0%} of the measured FLOP rate for its precision"
    reached = f"only {memory:.0%} of the bandwidth and {compute:.0%} of the FLOP rate"
    if median_ms is not None and median_ms < LAUNCH_BOUND_MS:
        return "latency- or launch-bound", f"{median_ms * 1000:.1f} us a call is mostly launch overhead ({reached})"
    if occupancy_fraction is not None and occupancy_fraction < LOW_OCCUPANCY:
        return "occupancy-limited", f"theoretical occupancy is {occupancy_fraction:.0%}, with {reached}"
    if waves is not None and waves < 1:
        return "latency- or launch-bound", f"its grid fills {waves:.0%} of the SMs once ({reached})"
    return "latency- or launch-bound", f"neither memory nor compute is near its ceiling ({reached})"


def kernel_row(kernel: dict, device: dict) -> dict:
    """One launched kernel's build resources and theoretical occupancy."""
    threads = _product(kernel.get("block"))
    occ = occupancy(threads=threads, registers=kernel.get("registers"), shared=kernel.get("shared_bytes"),
                    device=device)
    blocks, sms = _product(kernel.get("grid")), device.get("sm_count")
    waves = blocks / (sms * occ["blocks_per_sm"]) if blocks and sms and occ and occ["blocks_per_sm"] else None
    return {**kernel, "threads": threads, "occupancy": occ and occ["fraction"],
            "occupancy_limiter": occ and occ["limiter"], "waves": waves}


def profile(*, device: str, kernels: list[dict] | None, device_facts: dict, median_ms: float | None,
            flops: float | None, min_bytes: float | None, precision: str | None,
            counters: str | None = None) -> dict:
    """The verdict's `profile`: the rows of the launched kernels (the longest first), the achieved
    rates, the bottleneck and why, and what the counters say (or why there are none)."""
    rows = [kernel_row(k, device_facts) for k in (kernels or [])]
    rows.sort(key=lambda r: -(r.get("time_share") or 0))
    main = rows[0] if rows else {}
    rates = achieved(median_ms=median_ms, flops=flops, min_bytes=min_bytes,
                     device_name=device_facts.get("name"), precision=precision)
    label, why = bottleneck(median_ms=median_ms, rates=rates, occupancy_fraction=main.get("occupancy"),
                            waves=main.get("waves"))
    return {"kernels": rows or None, **rates, "occupancy": main.get("occupancy"), "bottleneck": label, "why": why,
            "counters": counters or (CPU_COUNTERS if device == "cpu" else COUNTERS_UNAVAILABLE)}


def with_counters(profile: dict, kernels: list[dict]) -> None:
    """The label again once Nsight Compute has measured the longest kernel: a pipe the counters show
    busy binds even where the problem's own bytes or FLOPs reach little of their ceiling, since the
    kernel moves or issues more than the problem needs (the runner's rates count the minimum only)."""
    main = kernels[0] if kernels else {}
    dram, sm = (main.get("dram_pct") or 0) / 100, (main.get("sm_pct") or 0) / 100
    memory, compute = profile.get("bandwidth_fraction"), profile.get("compute_fraction")
    if max(dram, sm) < NEAR_CEILING or profile.get("bottleneck") in ("memory-bound", "compute-bound"):
        return
    if dram >= sm:
        moved = f" while the problem's minimum bytes move at only {memory:.0%} of the measured bandwidth" \
            if memory is not None else ""
        profile["bottleneck"], profile["why"] = "memory-bound", (
            f"Nsight Compute finds DRAM {dram:.0%} busy{moved}: the kernel moves more bytes than the problem "
            "needs (data read more than once, spills, or uncoalesced access)")
    else:
        rate = f" while the problem's FLOPs run at only {compute:.0%} of their ceiling" if compute is not None else ""
        profile["bottleneck"], profile["why"] = "compute-bound", (
            f"Nsight Compute finds the SMs {sm:.0%} busy{rate}: instructions beyond the problem's own arithmetic "
            "(indexing, conversions, special functions, synchronisation) bind")


def _product(dims) -> int | None:
    if not dims:
        return None
    total = 1
    for d in dims:
        total *= int(d)
    return total
