#!/usr/bin/env bash
# On a GPU host without Django installed: the headless playbook search on the five seed problems
# at their full sizes (or the catalog keys in $KEYS), one after another, each in the foreground through `manage.py search`.
# Writes the leaderboards to $OUT/searches.txt (or ./var/gpu-searches.txt). Wheels for Django and
# friends may be carried in .whl/ (see docs/BENCHMARKS.md).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-var}; mkdir -p "$out"
if [[ -d .whl ]]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1 SQLITE_PATH=${SQLITE_PATH:-/tmp/kernellab-gpu.sqlite3} RUNNER_DEVICE=cuda
rounds=${ROUNDS:-1} ideas=${IDEAS:-4} per_search=${PER_SEARCH_SECONDS:-70}
python3 manage.py migrate -v 0 || exit 1
keys=${KEYS:-softmax-4096x65536 layernorm-16x64x256x256 matmul-4096x4096 conv2d-100x3x224x224 conv-relu-maxpool-100x3x224x224}
for key in $keys; do
    echo "=== $key (R=$rounds B=1 I=$ideas K=1)" | tee -a "$out/searches.txt"
    timeout "$per_search" python3 manage.py search "$key" --device cuda --rounds "$rounds" --parents 1 \
        --ideas "$ideas" --kernels 1 --no-progress >> "$out/searches.txt" 2>&1 || echo "($key stopped: exit $?)" >> "$out/searches.txt"
done
cat "$out/searches.txt"
