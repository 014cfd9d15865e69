#!/usr/bin/env python3
"""Nsight Compute numbers for playbook kernels at the catalog's full sizes, on a GPU host.

    python3 scripts/gpu_ncu.py --out DIR KEY:RECIPE:VARIANT [KEY:RECIPE:VARIANT ...]

For each target: one child process under `ncu --clock-control none --profile-from-start off` (the
card's clocks are left as they are) renders the playbook kernel for the catalog problem, runs its
forward three times, and profiles the fourth call only (cudaProfilerStart/Stop around it). Per
kernel launched in that call: duration, DRAM bytes read and written and the achieved bandwidth,
DRAM and SM throughput as % of peak, FFMA and tensor-pipe activity, achieved occupancy, L2 hit
rate. Prints a table and writes ncu.json to DIR. Needs torch, cupy and ncu; no Django.
"""

import argparse
import csv
import io
import json
import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METRICS = {
    "gpu__time_duration.sum": "duration",
    "dram__bytes_read.sum": "dram_read",
    "dram__bytes_write.sum": "dram_write",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": "ffma_thread_inst",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
}
# ncu's CSV writes durations as "ns" (or "nsecond", by version) and byte counts as "byte"/"Kbyte"/...
UNITS = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0,
         "second": 1.0, "byte": 1.0, "B": 1.0, "Kbyte": 1e3, "KB": 1e3, "Mbyte": 1e6, "MB": 1e6, "Gbyte": 1e9,
         "GB": 1e9}


def child(key: str, slug: str, variant: int) -> None:
    import torch

    import playbook
    from searches.catalog import get

    problem = get(key)
    recipe = next(r for r in playbook.recipes(problem.family, "cuda") if r.slug == slug)
    reference = types.ModuleType("reference")
    exec(compile(problem.source, "reference", "exec"), reference.__dict__)
    kernel = types.ModuleType("kernel")
    exec(compile(playbook.render(problem.source, problem.family, "cuda", recipe, variant), "kernel", "exec"),
         kernel.__dict__)
    torch.manual_seed(0)
    model = kernel.ModelNew(*reference.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in reference.get_inputs()]
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def profile(target: str) -> dict:
    key, slug, variant = target.split(":")
    command = ["ncu", "--csv", "--clock-control", "none", "--profile-from-start", "off",
               "--metrics", ",".join(METRICS), sys.executable, __file__, "--child", key, slug, variant]
    done = subprocess.run(command, capture_output=True, text=True, timeout=100)
    lines = [line for line in done.stdout.splitlines() if line.startswith('"')]
    kernels: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = f"{row['ID']} {row['Kernel Name'].split('(')[0]}"
        value = row["Metric Value"].replace(",", "")
        try:
            number = float(value) * UNITS.get(row["Metric Unit"], 1.0)
        except ValueError:
            continue
        kernels.setdefault(name, {"grid": row.get("Grid Size"), "block": row.get("Block Size")})[
            METRICS.get(row["Metric Name"], row["Metric Name"])] = number
    for facts in kernels.values():
        if facts.get("duration"):
            facts["dram_tb_s"] = (facts.get("dram_read", 0) + facts.get("dram_write", 0)) / facts["duration"] / 1e12
            facts["ffma_tflop_s"] = 2 * facts.get("ffma_thread_inst", 0) / facts["duration"] / 1e12
    return {"target": target, "returncode": done.returncode, "kernels": kernels,
            "stderr": done.stderr[-2000:] if done.returncode or not kernels else ""}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=3, metavar=("KEY", "RECIPE", "VARIANT"))
    parser.add_argument("--out", default=".")
    parser.add_argument("targets", nargs="*", help="KEY:RECIPE:VARIANT")
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return
    results = []
    print(f"{'target':<58} {'kernel':<24} {'us':>8} {'DRAM TB/s':>9} {'DRAM %':>7} {'SM %':>6} {'FFMA TF/s':>9} "
          f"{'tensor %':>8} {'occup %':>7} {'L2 hit %':>8}")
    for target in args.targets:
        result = profile(target)
        results.append(result)
        if not result["kernels"]:
            print(f"{target:<58} no kernel profiled (exit {result['returncode']}): {result['stderr'][-300:]}")
        for name, k in result["kernels"].items():
            print(f"{target:<58} {name[:24]:<24} {k.get('duration', 0) * 1e6:>8.1f} {k.get('dram_tb_s', 0):>9.2f} "
                  f"{k.get('dram_pct', 0):>7.1f} {k.get('sm_pct', 0):>6.1f} {k.get('ffma_tflop_s', 0):>9.2f} "
                  f"{k.get('tensor_pct', 0):>8.1f} {k.get('occupancy_pct', 0):>7.1f} {k.get('l2_hit_pct', 0):>8.1f}")
    Path(args.out, "ncu.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
