#!/usr/bin/env bash
# The product's own throughput on a bare GPU host (docs/BENCHMARKS.md): `manage.py bench_evaluator`
# twice on one fresh SQLite file (the problem is validated once): a playbook search of NVRTC
# candidates, then distinct load_inline kernels. Each run closes its window after MAX_SECONDS; the
# whole script stays under the 10 minutes of one device call with the defaults. Django and friends come from the wheels in ../.whl or .whl.
# Results under $OUT: search.json/.txt, load-inline.json/.txt, gpu.txt, *.err.
#   usage (on the GPU host, from the repo root): OUT=/tmp/out scripts/gpu_throughput.sh
#   SEARCHES (3: one playbook search runs out of ideas after ~13 candidates, too few for a steady
#   state), CANDIDATES (40 per search), LOAD_INLINE (8), MAX_SECONDS (120, per run), JOBS_IN_FLIGHT, POOL_SIZE.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kernellab-gpu-throughput}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 RUNNER_DEVICE=cuda LOG_LEVEL=${LOG_LEVEL:-WARNING}
export KERNELLAB_CACHE_DIR=${KERNELLAB_CACHE_DIR:-$(mktemp -d)}
source scripts/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
max=${MAX_SECONDS:-120}
database=sqlite:///$(mktemp -d)/throughput.sqlite3
DATABASE_URL=$database "$PY" manage.py migrate --noinput -v 0 || exit 1
knobs=(--database "$database")
[ -n "${JOBS_IN_FLIGHT:-}" ] && knobs+=(--jobs-in-flight "$JOBS_IN_FLIGHT")
[ -n "${POOL_SIZE:-}" ] && knobs+=(--pool-size "$POOL_SIZE")

status=0
# The outer timeout is a backstop: --max-seconds closes the window itself (validation comes before it).
timeout $((max + 140)) "$PY" manage.py bench_evaluator --device cuda --candidates "${CANDIDATES:-40}" \
  --searches "${SEARCHES:-3}" \
  --max-seconds "$max" "${knobs[@]}" --json "$OUT/search.json" >"$OUT/search.txt" 2>"$OUT/search.err" || status=1
cat "$OUT/search.txt"; tail -n 20 "$OUT/search.err"
timeout $((max + 140)) "$PY" manage.py bench_evaluator --device cuda --load-inline "${LOAD_INLINE:-8}" \
  --max-seconds "$max" "${knobs[@]}" --json "$OUT/load-inline.json" >"$OUT/load-inline.txt" \
  2>"$OUT/load-inline.err" || status=1
cat "$OUT/load-inline.txt"; tail -n 20 "$OUT/load-inline.err"
exit $status
