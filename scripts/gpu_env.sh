# Sourced by the scripts/gpu_*.sh checks: what a bare GPU host lacks, from the files carried beside
# the checkout (../.whl or .whl): Django and friends as wheels on PYTHONPATH (KERNELLAB_GPU_WHEELS=0
# skips them), and bubblewrap unpacked from its .deb when it is not installed.
PY=${PYTHON:-python3}
if [ "${KERNELLAB_GPU_WHEELS:-1}" != 0 ]; then
  for wheels in ../.whl .whl; do
    if compgen -G "$wheels/*.whl" >/dev/null; then
      "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
          "$wheels"/*.whl || exit 1
      export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
      break
    fi
  done
fi
if ! command -v bwrap >/dev/null && [ -z "${KERNELLAB_BWRAP:-}" ]; then
  for deb in ../.whl/bubblewrap_*.deb .whl/bubblewrap_*.deb; do
    [ -f "$deb" ] && dpkg -x "$deb" /tmp/bwrap && export KERNELLAB_BWRAP=/tmp/bwrap/usr/bin/bwrap && break
  done
fi
