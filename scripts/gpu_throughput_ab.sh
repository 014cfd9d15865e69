#!/usr/bin/env bash
# The evaluator's throughput before and after a change, on one machine in one device call: the same
# scripts/gpu_throughput.sh window for a baseline tree (a `git archive` tarball carried in .whl/) and then
# for this checkout. Machines lent one after another differ by more than most changes move the figure
# (docs/BENCHMARKS.md, 2026-12-07), so only a pair from one call compares.
#   usage (here):  git archive -o .whl/base.tar <commit>   (then carry ".whl")
#   (GPU host):    OUT=$OUT scripts/gpu_throughput_ab.sh   [BASE=.whl/base.tar; the window's own knobs
#                  pass through: LOAD_INLINE (default 0 here), MAX_SECONDS (100), SEARCHES, JOBS_IN_FLIGHT ...;
#                  TRACE=0 leaves out the phase traces]
# Results under $OUT/base and $OUT/new (throughput.json, throughput.txt), both tables printed. Then, where the
# tree has it and TRACE is not 0, each side's scripts/gpu_phase_trace.py (trace.json, trace.txt): which calls a
# phase that moved spends its seconds on, from the same machine.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/kernellab-gpu-ab}
BASE=${BASE:-.whl/base.tar}
export LOAD_INLINE=${LOAD_INLINE:-0} MAX_SECONDS=${MAX_SECONDS:-100}
[ -f "$BASE" ] || { echo "no baseline tarball at $BASE (git archive -o .whl/base.tar <commit>)" >&2; exit 2; }
tree=$(mktemp -d)
tar -xf "$BASE" -C "$tree" && cp -r .whl "$tree/" || exit 1
limit=$((MAX_SECONDS + 150))
(cd "$tree" && OUT=$OUT/base timeout "$limit" scripts/gpu_throughput.sh >/dev/null 2>&1)
OUT=$OUT/new timeout "$limit" scripts/gpu_throughput.sh >/dev/null 2>&1
for side in base new; do
  echo "== $side"
  cat "$OUT/$side/throughput.txt" 2>/dev/null || tail -n 20 "$OUT/$side/throughput.err"
done
[ "${TRACE:-1}" = 0 ] && exit 0
for side in base new; do
  dir=$PWD; [ $side = base ] && dir=$tree
  [ -f "$dir/scripts/gpu_phase_trace.py" ] || continue
  (cd "$dir" && timeout 120 "${PYTHON:-python3}" scripts/gpu_phase_trace.py --runs 2 --out "$OUT/$side/trace.json" \
      >"$OUT/$side/trace.txt" 2>&1)
  echo "== $side, phase trace"
  grep -E "^== |run [01]:" "$OUT/$side/trace.txt"
done
