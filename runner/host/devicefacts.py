"""The facts of the device an evaluator serves: what it is (model, memory, SMs, caches, clocks)
and the best it can do (the ceilings of runner/common/ceilings.py). The Workers page shows them and the
proposer is told them, under the keys listed in GPU_KEYS and CPU_KEYS.

An evaluator forks sandboxes, so it must never initialise CUDA itself: GPU facts are read in a
child process (`python -m runner.host.devicefacts cuda`, the runner's own code, no candidate) that sees
the GPU the evaluator is pinned to. CPU facts come from /proc and /sys, with no torch anywhere.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from ..common import ceilings

GPU_KEYS = ("device", "name", "uuid", "memory_bytes", "sm_count", "compute_capability", "shared_mem_per_block",
            "shared_mem_per_sm", "registers_per_block", "l2_bytes", "sm_clock_mhz", "mem_clock_mhz",
            "bandwidth_gbs", "tflops", "ceilings_source")
CPU_KEYS = ("device", "name", "cores", "caches", "vector_width_bits", "flags")
READ_TIMEOUT = 120.0
RUNNER_ROOT = str(Path(__file__).resolve().parents[2])
# The flags a kernel author chooses instructions by; the full list is hundreds of words of noise.
VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd", "asimdhp", "fphp",
                "asimddp", "bf16", "i8mm", "sve", "sve2")


def read(device: str, *, timeout: float = READ_TIMEOUT) -> dict:
    """The facts of this host's device of that kind. Never raises: what could not be read is
    said under "error", with whatever was read beside it."""
    if device == "cpu":
        return cpu_facts()
    if device != "cuda":
        return {"device": device, "error": f"no facts for device {device!r}"}
    return _read_in_child(device, timeout)


def _read_in_child(device: str, timeout: float) -> dict:
    # The same pass-through list as a sandbox, so the child sees exactly the GPU the evaluator's
    # sandboxes will see (CUDA_VISIBLE_DEVICES) and no secret.
    from .sandbox import PASS_THROUGH

    env = {key: os.environ[key] for key in PASS_THROUGH if key in os.environ}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [RUNNER_ROOT, env.get("PYTHONPATH")]))
    try:
        done = subprocess.run([sys.executable, "-m", "runner.host.devicefacts", device], cwd=RUNNER_ROOT, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"device": device, "error": f"reading the device's facts took more than {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return {"device": device, "error": f"the device's facts could not be read: {last[:300]}"}
    try:
        facts = json.loads(lines[-1])
    except ValueError as exc:
        return {"device": device, "error": f"the device's facts were not JSON: {exc}"}
    return facts if isinstance(facts, dict) else {"device": device, "error": "the device's facts were not an object"}


# --- GPU (in the child) -----------------------------------------------------------------------

def gpu_facts() -> dict:
    """Device 0 as this process sees it (the evaluator's pinned GPU). Initialises CUDA."""
    import torch

    if not torch.cuda.is_available():
        return {"device": "cuda", "error": "CUDA is not available here"}
    props = torch.cuda.get_device_properties(0)
    uuid = str(getattr(props, "uuid", "") or "")
    facts = {
        "device": "cuda", "name": props.name, "uuid": uuid, "memory_bytes": int(props.total_memory),
        "sm_count": int(props.multi_processor_count), "compute_capability": f"{props.major}.{props.minor}",
        "shared_mem_per_block": _int(getattr(props, "shared_memory_per_block", None)),
        "shared_mem_per_block_optin": _int(getattr(props, "shared_memory_per_block_optin", None)),
        "shared_mem_per_sm": _int(getattr(props, "shared_memory_per_multiprocessor", None)),
        "registers_per_block": _driver_attribute(12),  # CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK
        "registers_per_sm": _int(getattr(props, "regs_per_multiprocessor", None)),
        "l2_bytes": _int(getattr(props, "L2_cache_size", None)),
        "warp_size": _int(getattr(props, "warp_size", None)),
        "max_threads_per_sm": _int(getattr(props, "max_threads_per_multi_processor", None)),
        "cuda": torch.version.cuda,
    }
    facts.update(_nvml_clocks(uuid))
    facts.update(ceiling_facts(props.name))
    return facts


def ceiling_facts(name: str | None) -> dict:
    """The measured (or datasheet) ceilings of a known GPU model; nulls for any other device, so a
    reader never takes a guess for a measurement."""
    known = ceilings.measured(name)
    if known is None:
        return {"bandwidth_gbs": None, "tflops": None, "ceilings_source": None}
    return {"bandwidth_gbs": round(known.bandwidth / 1e9, 1),
            "tflops": {precision: round(known.rates[precision] / 1e12, 1)
                       for precision in ("fp32", "tf32", "fp16", "bf16") if precision in known.rates},
            "ceilings_source": known.source}


def _nvml_clocks(uuid: str) -> dict:
    """Maximum SM and memory clocks. NVML numbers GPUs physically, ignoring CUDA_VISIBLE_DEVICES,
    so the handle is looked up by the CUDA device's UUID; the driver's attributes are the fallback."""
    clocks = {"sm_clock_mhz": None, "mem_clock_mhz": None}
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
        clocks["sm_clock_mhz"] = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
        clocks["mem_clock_mhz"] = int(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM))
    except Exception:
        for key, attribute in (("sm_clock_mhz", 13), ("mem_clock_mhz", 36)):  # CLOCK_RATE, MEMORY_CLOCK_RATE (kHz)
            khz = _driver_attribute(attribute)
            clocks[key] = khz // 1000 if khz else None
    return clocks


def _driver_attribute(attribute: int) -> int | None:
    """cuDeviceGetAttribute on device 0, for what torch's properties leave out; None on failure."""
    try:
        import ctypes

        cuda = ctypes.CDLL("libcuda.so.1")
        value, device = ctypes.c_int(), ctypes.c_int()
        if cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(device), 0):
            return None
        if cuda.cuDeviceGetAttribute(ctypes.byref(value), attribute, device):
            return None
        return int(value.value)
    except (OSError, AttributeError):
        return None


def _int(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None


# --- CPU (in the caller: no torch) ------------------------------------------------------------

def cpu_facts(*, cpuinfo: str | None = None, sys_cpu: Path = Path("/sys/devices/system/cpu")) -> dict:
    """The host's CPU: model, usable cores, cache sizes (bytes), widest vector unit, vector flags."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    fields = _first_processor(cpuinfo)
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    name = fields.get("model name") or fields.get("Hardware") or platform.processor() or platform.machine()
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return {"device": "cpu", "name": name, "cores": cores, "logical_cpus": os.cpu_count(),
            "caches": cache_sizes(sys_cpu / "cpu0" / "cache"), "vector_width_bits": vector_width_bits(flags),
            "flags": [flag for flag in VECTOR_FLAGS if flag in flags], "machine": platform.machine()}


def _first_processor(cpuinfo: str) -> dict:
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep:
            if fields.get("flags") or fields.get("Features"):
                break  # the first processor's block has ended
            continue
        fields.setdefault(key, value.strip())
    return fields


def cache_sizes(cache_dir: Path) -> dict:
    """{"L1d": bytes, "L1i": bytes, "L2": bytes, "L3": bytes} from /sys's cache index folders."""
    sizes = {}
    for index in sorted(cache_dir.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        label = f"L{level}" + {"Data": "d", "Instruction": "i"}.get(kind, "")
        sizes[label] = _bytes(size)
    return sizes


def _bytes(size: str) -> int | None:
    units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    try:
        if size and size[-1].upper() in units:
            return int(size[:-1]) * units[size[-1].upper()]
        return int(size)
    except ValueError:
        return None


def vector_width_bits(flags: set[str]) -> int | None:
    """The widest SIMD register the flags promise (SVE's length is not in them: 128 is its least)."""
    for width, names in ((512, ("avx512f",)), (256, ("avx2", "avx")), (128, ("sse2", "asimd", "sve", "neon"))):
        if any(name in flags for name in names):
            return width
    return None


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    print(json.dumps(gpu_facts() if kind == "cuda" else cpu_facts()))
