"""Where a candidate's device-held seconds go, function by function: the sandbox's evaluate and truths
jobs run in fresh processes (as each sandbox is), outside bubblewrap, with a stand-in for the parent's
channel, under cProfile. Prints the phases and the costliest calls, and writes JSON to --out.
Diagnosis only: the product's figures come from scripts/gpu_throughput.sh.
  usage (on the GPU host, repo root): python3 scripts/gpu_phase_trace.py --out $OUT/trace.json [--runs 3]
  (--device cpu: the same on the CPU's softmax)
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Channel:
    """Answers what the parent would: the device at once, a sample seed, no retakes, no batches."""

    def __init__(self):
        self.replies = []

    def send(self, kind, **payload):
        if kind == "sample":
            self.replies.append({"seed": 12345})
        elif kind == "timing" and payload.get("at") == "end":
            self.replies.append({"again": False})
        elif kind == "batch" and payload.get("at") == "ready":
            self.replies.append({"batch": 0})

    def receive(self):
        return self.replies.pop(0) if self.replies else {}

    def request_device(self, untimed=False):
        pass


def child(kind: str, runs: int, device: str) -> dict:
    os.environ.setdefault("KERNELLAB_SANDBOX_ROOT", tempfile.mkdtemp())
    os.environ["TMPDIR"] = os.environ["KERNELLAB_SANDBOX_ROOT"]  # a candidate's own files, as in a sandbox
    tempfile.tempdir = None
    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    from runner import bench
    from runner.common.compile import make_cache_dirs

    make_cache_dirs()
    from runner.common import exchange
    from runner.inside import jobs, machine, truths

    machine.warm_up(device)
    report = {"kind": kind, "warm_up_s": time.perf_counter() - started, "runs": []}
    job = {"job": kind, "device": device, "seed": 7, "problem_source": bench.problem_source(device),
           "kernel_source": bench.kernel_source(device), "atol": None, "rtol": None, "allow_library": False,
           "rule": None, "paired": False, "sample_secret": "00" * 16}
    for run in range(runs):
        fd = exchange.create()
        profiler = cProfile.Profile()
        mark = time.perf_counter()
        profiler.enable()
        result = (truths.run(job, Channel(), fd) if kind == "truths"
                  else jobs.run_evaluate(job, Channel(), fd))
        profiler.disable()
        wall = time.perf_counter() - mark
        os.close(fd)
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
        cumulative = io.StringIO()
        pstats.Stats(profiler, stream=cumulative).sort_stats("cumulative").print_stats(45)
        report["runs"].append({"wall_s": wall, "status": result.get("status"), "reason": result.get("reason"),
                               "phases": result.get("phases"), "tottime": text.getvalue(),
                               "cumulative": cumulative.getvalue()})
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="trace.json")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", default="")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.runs, args.device)))
        return
    reports = []
    for kind in ("evaluate", "truths", "evaluate"):  # the second evaluate process: how much two fresh ones differ
        done = subprocess.run([sys.executable, __file__, "--child", kind, "--runs", str(args.runs),
                               "--device", args.device], capture_output=True, text=True)
        if done.returncode:
            reports.append({"kind": kind, "error": done.stderr[-4000:]})
            print(done.stderr[-4000:])
            continue
        report = json.loads(done.stdout.strip().splitlines()[-1])
        reports.append(report)
        print(f"== {kind}: warm-up {report['warm_up_s']:.2f} s")
        for i, run in enumerate(report["runs"]):
            print(f"  run {i}: wall {run['wall_s']:.3f} s, {run['status']} {run['reason'] or ''} "
                  f"phases {json.dumps({k: round(v, 3) for k, v in (run['phases'] or {}).items()})}")
        print(report["runs"][0]["cumulative"][-6000:])
        print(report["runs"][0]["tottime"][-4000:])
    Path(args.out).write_text(json.dumps(reports, indent=1))


if __name__ == "__main__":
    main()
