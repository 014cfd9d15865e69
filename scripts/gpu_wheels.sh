#!/usr/bin/env bash
# Fill .whl/ (git-ignored through .git/info/exclude) with what a bare GPU host lacks for the scripts/gpu_*.sh
# checks: Django and the app's other pure-Python requirements as Python 3.12 wheels, cupti-python, and
# Debian's bubblewrap .deb (scripts/gpu_env.sh installs both there). The host keeps its own torch,
# cupy, triton, numpy and nvidia-ml-py.
#   usage (here, from the repo root): scripts/gpu_wheels.sh; then carry ".whl" with each device call.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .git/info .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
  platforms+=(--platform "$tag")
done
pin() { grep -i "^$1==" requirements.txt; }
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" -d .whl \
  "$(pin Django)" "$(pin channels)" "$(pin django-q2)" "$(pin dj-database-url)" "$(pin whitenoise)" "$(pin anthropic)"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
  -d .whl cupti-python
(cd .whl && apt-get download bubblewrap)
ls .whl
