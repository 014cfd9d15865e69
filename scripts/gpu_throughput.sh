#!/usr/bin/env bash
# The product's own throughput on a bare GPU host (docs/BENCHMARKS.md): one `manage.py bench_evaluator`
# on a fresh SQLite file, one evaluator for all of it: the problem validated, SEARCHES playbook
# searches of NVRTC candidates, then LOAD_INLINE distinct load_inline kernels, then the same kernels
# again from the build cache. Each window closes after MAX_SECONDS; with the defaults the script stays
# under the 10 minutes of one device call. Django and friends come from the wheels in ../.whl or .whl.
# Results under $OUT: throughput.json (search, load_inline), throughput.txt, throughput.err, gpu.txt.
#   usage (on the GPU host, from the repo root): OUT=/tmp/out scripts/gpu_throughput.sh
#   SEARCHES (3: one playbook search runs out of ideas after ~13 candidates, too few for a steady
#   state), CANDIDATES (40 per search), LOAD_INLINE (16), MAX_SECONDS (150, per window), JOBS_IN_FLIGHT,
#   POOL_SIZE, PROBLEM (a catalog key; the bench's default is softmax-4096x65536).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kernellab-gpu-throughput}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 RUNNER_DEVICE=cuda LOG_LEVEL=${LOG_LEVEL:-WARNING}
export KERNELLAB_CACHE_DIR=${KERNELLAB_CACHE_DIR:-$(mktemp -d)}
source scripts/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
max=${MAX_SECONDS:-150}
database=sqlite:///$(mktemp -d)/throughput.sqlite3
DATABASE_URL=$database "$PY" manage.py migrate --noinput -v 0 || exit 1
knobs=(--database "$database")
[ -n "${JOBS_IN_FLIGHT:-}" ] && knobs+=(--jobs-in-flight "$JOBS_IN_FLIGHT")
[ -n "${POOL_SIZE:-}" ] && knobs+=(--pool-size "$POOL_SIZE")
[ -n "${PROBLEM:-}" ] && knobs+=(--problem "$PROBLEM")

status=0
# The outer timeout is a backstop: --max-seconds closes each of the three windows itself.
timeout $((3 * max + 120)) "$PY" manage.py bench_evaluator --device cuda --searches "${SEARCHES:-3}" \
  --candidates "${CANDIDATES:-40}" --load-inline "${LOAD_INLINE:-16}" --max-seconds "$max" "${knobs[@]}" \
  --json "$OUT/throughput.json" >"$OUT/throughput.txt" 2>"$OUT/throughput.err" || status=1
cat "$OUT/throughput.txt"; tail -n 20 "$OUT/throughput.err"
exit $status
