#!/usr/bin/env python3
"""Honest kernels stay correct and cheats stay caught on a busy host (the contention check),
on a GPU host, through the runner (no Django), four evaluations in flight as the worker keeps them:

    python3 scripts/gpu_contention.py --load matmul|builds [--out FILE]

`matmul`: a second process multiplies 8192x8192 fp32 matrices on the same GPU throughout.
`builds`: eight processes build distinct `load_inline` CUDA extensions on the host throughout.
Under the load: the bench problem validated with a fresh baseline cache (its baselines must come
back noisy or as measured alone, never silently inflated), the bench kernel, then every case of
the CUDA corpus (tests/runner/corpus): an honest kernel must be `correct` (noisy allowed), a cheat
or fault must get a verdict its index entry allows. Prints a line per case and writes the JSON
report to --out (default $OUT/contention-LOAD.json, or ./contention-LOAD.json), after every case.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner import api  # noqa: E402
from runner import bench  # noqa: E402
from tests.runner.corpus import cases, read  # noqa: E402

IN_FLIGHT = 4

MATMULS = """
import torch
a = torch.randn(8192, 8192, device="cuda")
while True:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
"""

BUILDS = r"""
import itertools, sys, tempfile
from torch.utils.cpp_extension import load_inline
for n in itertools.count():
    load_inline(f"busy_{sys.argv[1]}_{n}", cpp_sources="torch::Tensor twice(torch::Tensor x);",
                cuda_sources="#include <torch/extension.h>\n"
                             f"__global__ void k{n}(float* x) {{ x[threadIdx.x] *= 2.0f; }}\n"
                             "torch::Tensor twice(torch::Tensor x) "
                             f"{{ k{n}<<<1, 32>>>(x.data_ptr<float>()); return x; }}\n",
                functions=["twice"], build_directory=tempfile.mkdtemp(), verbose=False)
"""


def start_load(kind: str) -> list[subprocess.Popen]:
    if kind == "matmul":
        return [subprocess.Popen([sys.executable, "-c", MATMULS])]
    return [subprocess.Popen([sys.executable, "-c", BUILDS, str(i)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for i in range(8)]


def row(name: str, kind: str, expected: list, quarantine: bool, result: dict) -> dict:
    status = result.get("status")
    if kind == "honest":
        ok = status == "correct"
    else:
        ok = status in expected and (not quarantine or bool(result.get("quarantined")))
    return {"id": name, "kind": kind, "expected": expected, "status": status, "ok": ok,
            "quarantined": result.get("quarantined"), "noisy": result.get("noisy"),
            "median_ms": (result.get("timing") or {}).get("median_ms"), "reason": (result.get("reason") or "")[:300]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", choices=("matmul", "builds"), required=True)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = Path(args.out or Path(os.environ.get("OUT", ".")) / f"contention-{args.load}.json")
    os.environ["KERNELLAB_CACHE_DIR"] = tempfile.mkdtemp()  # the baselines are measured under the load too
    load = start_load(args.load)
    report = {"load": args.load, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cases": []}
    try:
        time.sleep(10 if args.load == "builds" else 5)  # the load under way before anything is timed
        with api.Pool(device="cuda", size=2 * IN_FLIGHT) as pool:
            problem = bench.problem_source("cuda")
            validation = pool.validate(problem, seed=0)
            report["validation"] = {k: validation.get(k) for k in ("status", "reason", "noisy", "baseline")}
            todo = [("bench kernel", "honest", ["correct"], False, problem, bench.kernel_source("cuda"), 180)]
            todo += [(c["id"], c["kind"], c["expected"], c["quarantined"], read(c["problem"]), read(c["kernel"]),
                      c.get("timeout", 180)) for c in cases(device="cuda")]
            done = threading.Lock()

            def judge(case):
                name, kind, expected, quarantine, problem_source, kernel, timeout = case
                try:
                    result = pool.evaluate(problem_source, kernel, seed=1234, timeout=timeout)
                except api.RunnerError as exc:
                    result = {"status": f"{type(exc).__name__}", "reason": str(exc)}
                line = row(name, kind, expected, quarantine, result)
                with done:
                    report["cases"].append(line)
                    out.write_text(json.dumps(report, indent=1, default=str))  # kept if the call's limit cuts the run
                    print(f"{'ok  ' if line['ok'] else 'FAIL'} {name:<36} {line['status']:<14} "
                          f"noisy={bool(line['noisy'])} {line['reason'][:100]}", flush=True)

            with ThreadPoolExecutor(max_workers=IN_FLIGHT) as executor:  # as the worker keeps jobs in flight
                list(executor.map(judge, todo))
    finally:
        for process in load:
            process.kill()
        for process in load:
            process.wait()
    report["all_ok"] = all(c["ok"] for c in report["cases"])
    out.write_text(json.dumps(report, indent=1, default=str))
    print(f"{sum(c['ok'] for c in report['cases'])} of {len(report['cases'])} as expected under the {args.load} load; "
          f"validation {report['validation']['status']}, noisy: {bool(report['validation']['noisy'])}")
    return 0 if report["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
