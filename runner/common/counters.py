"""Whether GPU performance counters are open to an unprivileged process, read from the driver's
parameters (NVreg_RestrictProfilingToAdminUsers shows there as RmProfilingAdminOnly). The
sandbox is never elevated to get them: when they are closed the profile says so."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from . import roofline

PARAMS = Path("/proc/driver/nvidia/params")
OPEN = "GPU performance counters are open to unprivileged processes here; the profile does not collect them"


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
