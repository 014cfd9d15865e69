"""The counter profile of a kernel judged correct, as a job of its own in a fresh sandbox while it holds
the device, so nothing of it can touch the verdict: Nsight Compute runs a process of the same sandbox
(same uid, filesystem, seccomp filter and limits, nothing elevated) that builds the kernel, calls it
twice to warm up, and profiles the third call only, clocks left as found. What comes back is ncu's raw
output, for the parent to read (runner/common/counters.py).

    python -m runner.inside.ncuprofile ROOT SEED      (the profiled process)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from ..common import counters

TIMEOUT_S = 240.0


def run(job: dict, channel, root: Path) -> dict:
    (root / "problem.py").write_text(job["problem_source"])
    (root / "kernel.py").write_text(job["kernel_source"])
    channel.request_device()
    return collect(root, int(job["seed"]))


def collect(root: Path, seed: int) -> dict:
    """{"returncode", "output"}: what ncu said, or why it did not run."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return {"returncode": -1, "output": "Nsight Compute (ncu) is not on the sandbox's PATH"}
    command = [ncu, "--csv", "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
               "--metrics", ",".join(counters.PROFILE_METRICS),
               sys.executable, "-s", "-m", "runner.inside.ncuprofile", str(root), str(seed)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=root)
    except subprocess.TimeoutExpired:
        return {"returncode": -1, "output": f"ncu did not finish within {TIMEOUT_S:.0f} s"}
    except OSError as exc:
        return {"returncode": -1, "output": f"ncu could not start: {exc}"}
    output = done.stdout + "\n" + done.stderr
    return {"returncode": done.returncode, "output": output[-counters.PROFILE_OUTPUT_LIMIT:]}


def main() -> None:
    import torch

    from . import problem as problems

    root, seed = Path(sys.argv[1]), int(sys.argv[2])
    module = problems.load_module((root / "problem.py").read_text(), root / "problem.py", "kernellab_problem")
    kernel = problems.load_module((root / "kernel.py").read_text(), root / "kernel.py", "kernellab_kernel")
    torch.manual_seed(seed)
    model = kernel.ModelNew(*module.get_init_inputs()).to("cuda").eval()
    inputs = problems.make_inputs(module, "get_inputs", seed, "cuda")
    with torch.no_grad():
        for _ in range(2):
            model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
