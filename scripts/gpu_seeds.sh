#!/usr/bin/env bash
# The five seed problems' playbook searches through the evaluator worker on a bare GPU host
# (docs/BENCHMARKS.md, issue "Beat PyTorch on the seed problems"): one `manage.py bench_seeds` on a
# fresh SQLite file. Writes under $OUT: seeds.json (the rows; docs/benchmarks/seed_problems.json keeps
# them), seeds.txt (the table), seeds.err, gpu.txt.
#   usage (on the GPU host, from the repo root, .whl carried): OUT=/tmp/out scripts/gpu_seeds.sh
#   ROUNDS (3), PARENTS (2), IDEAS (3), KERNELS (2): bench_seeds' own defaults; KEYS (the five), MAX_SECONDS (400).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kernellab-gpu-seeds}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 RUNNER_DEVICE=cuda LOG_LEVEL=${LOG_LEVEL:-WARNING}
export KERNELLAB_CACHE_DIR=${KERNELLAB_CACHE_DIR:-$(mktemp -d)}
source scripts/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
max=${MAX_SECONDS:-400}
knobs=(--rounds "${ROUNDS:-3}" --parents "${PARENTS:-2}" --ideas "${IDEAS:-3}" --kernels "${KERNELS:-2}"
       --max-seconds "$max")
[ -n "${KEYS:-}" ] && knobs+=(--keys "$KEYS")
status=0
# The outer timeout is a backstop: --max-seconds pauses the searches itself (validation is outside it).
timeout $((max + 150)) "$PY" manage.py bench_seeds --device cuda --json "$OUT/seeds.json" "${knobs[@]}" \
  >"$OUT/seeds.txt" 2>"$OUT/seeds.err" || status=1
cat "$OUT/seeds.txt"; tail -n 20 "$OUT/seeds.err"
exit $status
