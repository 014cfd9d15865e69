#!/usr/bin/env bash
# A search run on a named subset of KernelBench level 1, scored in both modes (KernelLab's and
# KernelBench's) against eager, torch.compile's default and CUDA graphs (docs/BENCHMARKS.md, "A search
# run"). On a fresh SQLite file: migrate, a user, `import_problems --validate` of the subset
# (tests/fixtures/kernelbench/level1, KernelBench's own files), then `manage.py bench_run`: one evaluator
# validates them, `start_run proposer=playbook rounds=$ROUNDS baselines=$BASELINES` starts one search per
# problem as one run, its searches are advanced until done or MAX_SECONDS, and `run_scores --every`
# scores it. Writes under $OUT: run.json (every mode x baseline, and the evaluator per problem), run.txt
# (the tables), run.err, import.txt, gpu.txt and run.sqlite3 (the database, for `run_scores` or the run
# page later).
#   on the H200 (from the repo root, .whl carried; one device call, under 10 minutes):
#     OUT=/tmp/out scripts/gpu_run.sh
#   on the CPU (the CPU catalog problems; CUDA graphs are skipped there with the reason, max-autotune is timed):
#     DEVICE=cpu OUT=/tmp/out scripts/gpu_run.sh
#   PROBLEMS (file names of the subset), ROUNDS (2), PARENTS (1), IDEAS (2), KERNELS (1),
#   BASELINES (cudagraph; on the CPU max-autotune,cudagraph), MAX_SECONDS (420), POOL_SIZE, JOBS_IN_FLIGHT,
#   NAME (the run's name).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kernellab-gpu-run}
mkdir -p "$OUT"
device=${DEVICE:-cuda}
export PYTHONUNBUFFERED=1 RUNNER_DEVICE=$device LOG_LEVEL=${LOG_LEVEL:-WARNING}
export KERNELLAB_CACHE_DIR=${KERNELLAB_CACHE_DIR:-$(mktemp -d)}
source scripts/gpu_env.sh
db=$OUT/run.sqlite3
rm -f "$db"
export DATABASE_URL=sqlite:///$db
if [ "$device" = cuda ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >"$OUT/gpu.txt" 2>&1
  # Served by the playbook on CUDA (matmul, elementwise, softmax, layernorm, reduction, conv2d), the
  # same shapes KernelBench times.
  from=tests/fixtures/kernelbench/level1
  problems=${PROBLEMS:-1_Square_matrix_multiplication_.py 19_ReLU.py 21_Sigmoid.py 23_Softmax.py 26_GELU_.py \
40_LayerNorm.py 47_Sum_reduction_over_a_dimension.py 50_conv_standard_2D__square_input__square_kernel.py}
  baselines=${BASELINES:-cudagraph}
else
  echo "cpu: $(nproc) cores" >"$OUT/gpu.txt"
  from=searches/catalog/problems
  problems=${PROBLEMS:-softmax_cpu.py gelu_cpu.py layernorm_cpu.py}
  baselines=${BASELINES:-max-autotune,cudagraph}
fi
# The subset as a level1 folder (import_problems reads the level from it, the number from N_ prefixes).
work=$(mktemp -d)
mkdir -p "$work/level1"
n=0
for file in $problems; do
  [ -f "$from/$file" ] || { echo "no problem file $from/$file" >&2; exit 1; }
  n=$((n + 1))
  if [[ $file =~ ^[0-9]+_ ]]; then cp "$from/$file" "$work/level1/$file"; else cp "$from/$file" "$work/level1/${n}_$file"; fi
done
suite="KernelBench level 1 subset ($device)"
name=${NAME:-playbook R${ROUNDS:-2} vs $baselines}
max=${MAX_SECONDS:-420}
"$PY" manage.py migrate --noinput -v 0 || exit 1
"$PY" manage.py shell -c "from django.contrib.auth import get_user_model as u; u().objects.create_user('bench')" >/dev/null \
  || exit 1
"$PY" manage.py import_problems "$work/level1" --suite "$suite" --device "$device" --validate --user bench \
  >"$OUT/import.txt" 2>&1 || { cat "$OUT/import.txt"; exit 1; }
knobs=(proposer=playbook "rounds=${ROUNDS:-2}" "parents_per_round=${PARENTS:-1}" "ideas_per_parent=${IDEAS:-2}"
       "kernels_per_idea=${KERNELS:-1}" bank_size=0 "baselines=$baselines")
options=(--suite "$suite" --name "$name" --device "$device" --user bench --max-seconds "$max" --json "$OUT/run.json")
[ -n "${POOL_SIZE:-}" ] && options+=(--pool-size "$POOL_SIZE")
[ -n "${JOBS_IN_FLIGHT:-}" ] && options+=(--jobs-in-flight "$JOBS_IN_FLIGHT")
status=0
# The outer timeout is a backstop: --max-seconds pauses the searches itself; the scores come after.
timeout $((max + 120)) "$PY" manage.py bench_run "${options[@]}" "${knobs[@]}" >"$OUT/run.txt" 2>"$OUT/run.err" \
  || status=1
cat "$OUT/import.txt" "$OUT/run.txt"; tail -n 30 "$OUT/run.err"
rm -rf "$work"
exit $status
