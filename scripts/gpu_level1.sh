#!/usr/bin/env bash
# KernelBench level 1 through the worker path on a bare GPU host (docs/BENCHMARKS.md):
# `manage.py bench_suite` on the fixture's level1, continuing the committed progress report.
# Reads docs/benchmarks/level1-h200.json (it keeps every swept problem's row, so the sweep's fast_p
# covers every call; DB may name an earlier run's SQLite file to continue in it); writes under $OUT:
# level1-h200.json (commit it back), level1.sqlite3 (the database), level1.txt/.err, gpu.txt.
#   usage (on the GPU host, from the repo root): OUT=/tmp/out scripts/gpu_level1.sh
#   LIMIT (25), MAX_SECONDS (240), CANDIDATES (3), JOBS_IN_FLIGHT (the batch size too), POOL_SIZE,
#   MEMORY_GB (what a batch may plan for; default 60% of the device), DB (a .sqlite3 to continue),
#   AGAIN (problems done before to do again, by number: e.g. 11,56,68,69).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kernellab-gpu-level1}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 RUNNER_DEVICE=cuda LOG_LEVEL=${LOG_LEVEL:-WARNING}
export KERNELLAB_CACHE_DIR=${KERNELLAB_CACHE_DIR:-$(mktemp -d)}
source scripts/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv,noheader \
  >"$OUT/gpu.txt" 2>&1
report=$OUT/level1-h200.json
[ -f docs/benchmarks/level1-h200.json ] && cp docs/benchmarks/level1-h200.json "$report"
db=$OUT/level1.sqlite3
[ -n "${DB:-}" ] && [ -f "$DB" ] && cp "$DB" "$db"
max=${MAX_SECONDS:-240}
knobs=(--database "sqlite:///$db" --limit "${LIMIT:-25}" --candidates "${CANDIDATES:-3}" --max-seconds "$max")
[ -n "${JOBS_IN_FLIGHT:-}" ] && knobs+=(--jobs-in-flight "$JOBS_IN_FLIGHT")
[ -n "${POOL_SIZE:-}" ] && knobs+=(--pool-size "$POOL_SIZE")
[ -n "${MEMORY_GB:-}" ] && knobs+=(--memory-gb "$MEMORY_GB")
[ -n "${AGAIN:-}" ] && knobs+=(--again "$AGAIN")
status=0
# The outer timeout is a backstop: --max-seconds cuts the waits itself; the report is saved per batch.
timeout $((max + 60)) "$PY" manage.py bench_suite --device cuda --json "$report" "${knobs[@]}" \
  >"$OUT/level1.txt" 2>"$OUT/level1.err" || status=1
cat "$OUT/level1.txt"; tail -n 30 "$OUT/level1.err"
exit $status
