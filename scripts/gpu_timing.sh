#!/usr/bin/env bash
# The timing checks of one device call (docs/BENCHMARKS.md, "Timing on a busy host"):
# ten repeatability measurements in a row (runner bench, throughput skipped), then one
# problem validated and one honest kernel evaluated while a second process runs matmuls on
# the same GPU. Results under $OUT: repeat.json, contention.json, *.err.
#   usage (on the GPU host, from the repo root): OUT=/tmp/out scripts/gpu_timing.sh [REPEATS]
set -uo pipefail
OUT=${OUT:-/tmp/kernellab-gpu-timing}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
KERNELLAB_GPU_WHEELS=${KERNELLAB_GPU_WHEELS:-0} source "$(dirname "$0")/gpu_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1

KERNELLAB_CACHE_DIR=$(mktemp -d) timeout "${REPEAT_LIMIT_S:-330}" "$PY" -m runner bench --device cuda \
  --repeats "${1:-10}" --no-throughput --json >"$OUT/repeat.json" 2>"$OUT/repeat.err"

# (b) of the issue's contention check: matmuls from a process outside the evaluator.
"$PY" - <<'BUSY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda")
end = time.time() + 150
while time.time() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
BUSY
busy=$!
sleep 5
"$PY" - >"$OUT/contention.json" 2>"$OUT/contention.err" <<'CONTENTION'
import json, os, tempfile
os.environ["KERNELLAB_CACHE_DIR"] = tempfile.mkdtemp()  # the baseline is measured under contention too
from runner import api, bench
problem, kernel = bench.problem_source("cuda"), bench.kernel_source("cuda")
with api.Pool(device="cuda", size=2) as pool:
    validation = pool.validate(problem, seed=0)
    verdict = pool.evaluate(problem, kernel, seed=1)
keep = ("status", "reason", "noisy", "measurements", "baseline", "speedup_vs_eager")
print(json.dumps({"validation": {k: validation.get(k) for k in keep},
                  "verdict": {k: verdict.get(k) for k in keep},
                  "median_ms": (verdict.get("timing") or {}).get("median_ms")}, indent=2, default=str))
CONTENTION
kill "$busy" 2>/dev/null
wait
