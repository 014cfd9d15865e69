#!/usr/bin/env bash
# The evaluator's throughput before and after a change, on one machine in one device call: the same
# scripts/gpu_throughput.sh window for a baseline tree (a `git archive` tarball carried in .whl/) and then
# for this checkout. Machines lent one after another differ by more than most changes move the figure
# (docs/BENCHMARKS.md, 2026-12-07), so only a pair from one call compares.
#   usage (here):  git archive -o .whl/base.tar <commit>   (then carry ".whl")
#   (GPU host):    OUT=$OUT scripts/gpu_throughput_ab.sh   [BASE=.whl/base.tar; the window's own knobs
#                  pass through: LOAD_INLINE (default 0 here), MAX_SECONDS (100), SEARCHES, JOBS_IN_FLIGHT ...]
# Results under $OUT/base and $OUT/new (throughput.json, throughput.txt), both tables printed.
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
