#!/usr/bin/env bash
# load_inline throughput through the worker path and the build cache, in one device call
# (docs/BENCHMARKS.md, "load_inline build cache and throughput"): `manage.py bench_evaluator
# --load-inline N` (N distinct kernels, then the same N again from the build cache; the report's
# "contention" compares medians timed while >= 8 other compiles ran with the cached pass's), a
# sampler of the host's compiler processes during it, then the runner's load_inline GPU tests
# (tests/runner/external) in whatever time is left.
# Results under $OUT: load-inline.json/.txt/.err, compilers.txt, gpu-tests.log/.xml, gpu.txt.
#   usage (on the GPU host, from the repo root): OUT=/tmp/out scripts/gpu_buildcache.sh
#   LOAD_INLINE (16), MAX_SECONDS (190, the first pass), JOBS_IN_FLIGHT, POOL_SIZE, TESTS_UNTIL (epoch s).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kernellab-gpu-buildcache}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 RUNNER_DEVICE=cuda LOG_LEVEL=${LOG_LEVEL:-WARNING}
export KERNELLAB_CACHE_DIR=${KERNELLAB_CACHE_DIR:-$(mktemp -d)}  # fresh: no build or baseline cached before
export KERNELLAB_BASELINE_COMPILE=${KERNELLAB_BASELINE_COMPILE:-0}  # validation lies outside the window
source scripts/gpu_env.sh
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; nproc;
  nvcc --version | tail -n 2; c++ --version | head -n 1; } >"$OUT/gpu.txt" 2>&1
database=sqlite:///$(mktemp -d)/buildcache.sqlite3
DATABASE_URL=$database "$PY" manage.py migrate --noinput -v 0 || exit 1
knobs=(--database "$database")
[ -n "${JOBS_IN_FLIGHT:-}" ] && knobs+=(--jobs-in-flight "$JOBS_IN_FLIGHT")
[ -n "${POOL_SIZE:-}" ] && knobs+=(--pool-size "$POOL_SIZE")

( while sleep 1; do  # compiler processes on the host, once a second
    echo "$(date +%s) $(ps -eo comm= | grep -cE '^(cc1plus|cicc|ptxas|cudafe\+\+|nvcc)$')"
  done ) >"$OUT/compilers.txt" &
sampler=$!
status=0
max=${MAX_SECONDS:-190}
timeout $((2 * max + 120)) "$PY" manage.py bench_evaluator --device cuda --load-inline "${LOAD_INLINE:-16}" \
  --max-seconds "$max" "${knobs[@]}" --json "$OUT/load-inline.json" >"$OUT/load-inline.txt" \
  2>"$OUT/load-inline.err" || status=1
kill "$sampler"
cat "$OUT/load-inline.txt"; tail -n 20 "$OUT/load-inline.err"

left=$(( ${TESTS_UNTIL:-0} - $(date +%s) ))
if [ "$left" -gt 30 ]; then
  timeout "$left" "$PY" -m pytest -p no:django -p no:playwright -p no:cacheprovider tests/runner/external -m gpu -q -rA \
      -n "${TEST_WORKERS:-16}" --junitxml="$OUT/gpu-tests.xml" >"$OUT/gpu-tests.log" 2>&1 || status=1
  tail -n 40 "$OUT/gpu-tests.log"
else
  echo "no time left for the GPU tests ($left s)"
fi
exit $status
