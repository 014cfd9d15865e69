#!/usr/bin/env bash
# The timing checks of one device call (docs/BENCHMARKS.md, "Timing on a busy host"):
# ten repeatability measurements in a row (runner bench, throughput skipped), then the
# contention checks of scripts/gpu_contention.py (CONTENTION="matmul builds" by default).
# Results under $OUT: repeat.json, contention-LOAD.json/.txt, *.err.
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

# The contention checks: (b) matmuls from a second process on the same GPU, (a) eight load_inline
# builds on the host; under each, the bench problem and kernel, then the whole CUDA corpus.
for load in ${CONTENTION:-matmul builds}; do
  timeout "${CONTENTION_LIMIT_S:-240}" "$PY" scripts/gpu_contention.py --load "$load" \
    --out "$OUT/contention-$load.json" >"$OUT/contention-$load.txt" 2>"$OUT/contention-$load.err"
  tail -n 3 "$OUT/contention-$load.txt"
done
