"""Whether GPU performance counters are open to an unprivileged process, read from the driver's
parameters (NVreg_RestrictProfilingToAdminUsers shows there as RmProfilingAdminOnly). The
sandbox is never elevated to get them: when they are closed the profile says so."""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

from . import roofline

PARAMS = Path("/proc/driver/nvidia/params")
OPEN = ("GPU performance counters are open to unprivileged processes here; not read in this run (a counter profile "
        "reads them: a search's profiled parents on a GPU, the Profile button of a kernel's page)")


def admin_only(params: str) -> bool | None:
    """RmProfilingAdminOnly from the driver's parameters; None when the line is missing."""
    for line in params.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "RmProfilingAdminOnly":
            return value.strip() != "0"
    return None


def status(params_path: Path = PARAMS) -> dict:
    """`open` only when the driver lets any user read counters and Nsight Compute is installed."""
    try:
        restricted = admin_only(params_path.read_text())
    except OSError:
        restricted = None
    ncu = shutil.which("ncu")
    if restricted is None:
        why = "the NVIDIA driver's parameters are not readable here"
    elif restricted:
        why = "the driver restricts profiling to admin users (NVreg_RestrictProfilingToAdminUsers=1)"
    else:
        why = "" if ncu else "Nsight Compute (ncu) is not installed"
    is_open = restricted is False and bool(ncu)
    return {"open": is_open, "ncu": ncu, "note": OPEN if is_open else f"{roofline.COUNTERS_UNAVAILABLE}: {why}"}


# A trivial kernel for the probe's direct test: Nsight Compute reading one counter of it.
TRIVIAL = "import torch; x = torch.ones(1 << 20, device='cuda'); print(float((x + 1).sum()))"
NCU_METRIC = "sm__cycles_elapsed.avg"


def ncu_trial(timeout: float = 180.0) -> dict:
    """The probe's direct check, as this process's uid: ncu on a trivial kernel, clocks untouched."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return {"open": None, "note": "Nsight Compute (ncu) is not on this process's PATH"}
    done = subprocess.run([ncu, "--clock-control", "none", "--metrics", NCU_METRIC, sys.executable, "-c", TRIVIAL],
                          capture_output=True, text=True, timeout=timeout)
    return read_trial(done.returncode, done.stdout + done.stderr)


def read_trial(returncode: int, output: str) -> dict:
    """ERR_NVGPUCTRPERM is the driver refusing counters to this user; a metric read means open."""
    if "ERR_NVGPUCTRPERM" in output:
        return {"open": False, "note": f"{roofline.COUNTERS_UNAVAILABLE}: the driver refused counters to this user"}
    if returncode == 0 and NCU_METRIC in output:
        return {"open": True, "note": OPEN}
    return {"open": None, "note": f"ncu failed (exit {returncode}): {output.strip()[-300:]}"}


# --- the counter profile: Nsight Compute on one call of a correct kernel ------------------------
# Requested per evaluation (`counters`, a profile on demand); collected after the verdict by a counters
# job in a fresh sandbox holding the device (runner/inside/ncuprofile.py); its CSV parsed here, in the
# parent. Regexes keep the request valid across architectures: the tensor pipes are HMMA before
# Hopper and also GMMA (wgmma) on it; the stall reasons differ between versions.
PROFILE_METRICS = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    r"regex:^sm__pipe_tensor_op_[a-z]+_cycles_active\.avg\.pct_of_peak_sustained_active$",
    r"regex:^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$",
)
PROFILE_OUTPUT_LIMIT = 256 * 1024  # characters of ncu's output the sandbox may send
KERNELS_SHOWN = 3
STALLS_SHOWN = 3
_TENSOR = re.compile(r"^sm__pipe_tensor_op_([a-z]+)_cycles_active\.avg\.pct_of_peak_sustained_active$")
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_([a-z_]+)_per_issue_active\.ratio$")
_NAMED = {"sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
          "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
          "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct"}
_SECONDS = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0,
            "second": 1.0}


def read_profile(returncode: int, output: str) -> dict:
    """{"status": "ok", "kernels": [...the longest first]} from ncu's CSV, or "unavailable"/"failed" with a note."""
    if "ERR_NVGPUCTRPERM" in output:
        return {"status": "unavailable",
                "note": f"{roofline.COUNTERS_UNAVAILABLE}: the driver refused counters to the sandbox's user"}
    kernels: dict[str, dict] = {}
    rows = [line for line in output.splitlines() if line.startswith('"')]
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        key, metric = row.get("ID"), row.get("Metric Name") or ""
        try:
            value = float((row.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            continue
        if key is None or not math.isfinite(value):
            continue
        kernel = kernels.setdefault(key, {"name": (row.get("Kernel Name") or "?")[:120], "duration_us": None,
                                          "tensor_pct": {}, "stalls": {}})
        if metric == "gpu__time_duration.sum":
            kernel["duration_us"] = value * _SECONDS.get(row.get("Metric Unit") or "ns", 1e-9) * 1e6
        elif metric in _NAMED:
            kernel[_NAMED[metric]] = value
        elif _TENSOR.match(metric):
            kernel["tensor_pct"][_TENSOR.match(metric).group(1)] = value
        elif _STALL.match(metric):
            kernel["stalls"][_STALL.match(metric).group(1)] = value
    if not kernels:
        tail = output.strip()[-300:] or "no output"
        why = f"ncu measured no kernel (exit {returncode}): " if returncode >= 0 else ""  # < 0: it did not run
        return {"status": "failed", "note": f"{roofline.COUNTERS_UNAVAILABLE}: {why}{tail}"}
    ordered = sorted(kernels.values(), key=lambda k: -(k["duration_us"] or 0))[:KERNELS_SHOWN]
    for kernel in ordered:
        kernel["stalls"] = sorted(kernel["stalls"].items(), key=lambda s: -s[1])[:STALLS_SHOWN]
    return {"status": "ok", "kernels": ordered}


def profile_text(profile: dict) -> str:
    """The profile's counters line: each measured kernel's utilisation and its top stall reasons."""
    if profile.get("status") != "ok":
        return profile.get("note") or roofline.COUNTERS_UNAVAILABLE

    def pct(value):
        return f"{value:.0f}%" if value is not None else "?"

    parts = []
    for k in profile["kernels"]:
        tensor = ", ".join(f"{pipe} {pct(v)}" for pipe, v in sorted(k["tensor_pct"].items())) or "?"
        stalls = ", ".join(f"{reason} {value:.2g}" for reason, value in k["stalls"]) or "?"
        duration = f"{k['duration_us']:.4g} us" if k.get("duration_us") is not None else "? us"
        parts.append(f"{k['name'][:60]} ({duration}): SM {pct(k.get('sm_pct'))} and DRAM {pct(k.get('dram_pct'))} "
                     f"of peak, achieved occupancy {pct(k.get('occupancy_pct'))}, tensor pipes {tensor}; "
                     f"top stalls (cycles per issue) {stalls}")
    return "Nsight Compute, one call, clocks as found: " + "; ".join(parts)
