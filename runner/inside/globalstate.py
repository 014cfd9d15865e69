"""torch's global settings, as the candidate's sandbox sees them (plain torch; imported there).

A kernel may change the backend flags the field sets (checks.BACKEND_FLAGS): each is read here,
and eager is timed again under the kernel's values (runner/inside/jobs.py). Every other global setting
the reference and the baselines are measured under is watched instead of read off the source: a
kernel may assign one (`torch.backends.cudnn.deterministic = False`, as published kernels do), and
is refused only if the value it leaves differs from the runner's.
"""

from __future__ import annotations

import torch


def backend_flags() -> dict:
    """The global backend settings a kernel may change (checks.BACKEND_FLAGS)."""
    return {"cudnn.benchmark": bool(torch.backends.cudnn.benchmark),
            "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


def _read(getter):
    try:
        return getter()
    except Exception:  # a setting this build of torch lacks
        return None


WATCHED = {
    "torch.backends.cudnn.enabled": lambda: bool(torch.backends.cudnn.enabled),
    "torch.backends.cudnn.deterministic": lambda: bool(torch.backends.cudnn.deterministic),
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
        lambda: bool(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
        lambda: bool(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    "torch.backends.cuda.flash_sdp_enabled()": lambda: torch.backends.cuda.flash_sdp_enabled(),
    "torch.backends.cuda.mem_efficient_sdp_enabled()": lambda: torch.backends.cuda.mem_efficient_sdp_enabled(),
    "torch.backends.cuda.math_sdp_enabled()": lambda: torch.backends.cuda.math_sdp_enabled(),
    "torch.are_deterministic_algorithms_enabled()": lambda: torch.are_deterministic_algorithms_enabled(),
    "torch.backends.mkldnn.enabled": lambda: bool(torch.backends.mkldnn.enabled),
    "torch.get_num_threads()": torch.get_num_threads,
}


def watched() -> dict:
    return {name: _read(getter) for name, getter in WATCHED.items()}


def changed(before: dict) -> str | None:
    """Why the kernel is refused when it left a watched setting other than the runner's, else None."""
    now = watched()
    moved = [f"{name} from {before[name]} to {now[name]}" for name in WATCHED if now[name] != before[name]]
    if not moved:
        return None
    return (f"the kernel changed {', '.join(moved)}: global state the reference and the baselines are measured "
            "under; only cudnn.benchmark, cudnn.allow_tf32, cuda.matmul.allow_tf32 and the float32 matmul "
            "precision may change")
