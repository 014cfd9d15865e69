#!/usr/bin/env bash
# The whole GPU check in one device call: a probe of the host, a probe from inside a sandbox
# (uid, filter, CUDA, NVRTC, Triton cache, CUPTI, NVML, load_inline), the runner's GPU tests
# (every `-m gpu` test under tests/runner) and the runner benchmark. Results as files under
# $OUT (probe.json, bytecode.json, sandbox-probe.json, gpu-tests.xml, gpu-tests.log, bench.json, bench.txt).
# Without bubblewrap installed, a bubblewrap .deb in ../.whl or .whl is unpacked to /tmp/bwrap.
#   usage (on the GPU host, from the repo root): OUT=/tmp/out scripts/gpu_check.sh [--no-tests] [--no-bench]
#   GPU_TESTS=tests/runner/test_gpu.py limits the tests to one file; GPU_PYTEST_ARGS adds pytest options
#   (e.g. "-n 4": the runner's sandboxes take their own slots, and timing waits for the device lock).
#   BENCH_ARGS adds `runner bench` options (e.g. "--repeats 2 --candidates 30").
set -uo pipefail
OUT=${OUT:-/tmp/kernellab-gpu-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export KERNELLAB_CACHE_DIR=${KERNELLAB_CACHE_DIR:-$(mktemp -d)}
PY=${PYTHON:-python3}
KERNELLAB_GPU_WHEELS=${KERNELLAB_GPU_WHEELS:-0} source "$(dirname "$0")/gpu_env.sh"
run_tests=1; run_bench=1
for arg in "$@"; do
  case "$arg" in --no-tests) run_tests=0 ;; --no-bench) run_bench=0 ;; esac
done

"$PY" - >"$OUT/probe.json" <<'PROBE'
import json, shutil, subprocess, time
probe = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
started = time.time()
import torch
probe["torch"], probe["cuda"] = torch.__version__, torch.version.cuda
probe["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
probe["torch_import_and_cuda_init_s"] = (torch.zeros(1, device="cuda"), time.time() - started)[1]
try:
    import cupy, triton
    probe["cupy"], probe["triton"] = cupy.__version__, triton.__version__
except ImportError as exc:
    probe["missing"] = str(exc)
smi = shutil.which("nvidia-smi")
if smi:
    probe["nvidia_smi"] = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                                         capture_output=True, text=True).stdout.strip()
probe["os"] = open("/etc/os-release").read().split("PRETTY_NAME=")[-1].split("\n")[0].strip('"')
probe["cgroup"] = open("/proc/self/cgroup").read().strip()
print(json.dumps(probe, indent=2))
PROBE
cat "$OUT/probe.json"
# how many library modules a sandbox imports had no bytecode (written now, as an evaluator's first sandbox would)
"$PY" -m runner.host.bytecode cuda >"$OUT/bytecode.json" 2>&1
"$PY" -m runner probe --device cuda --load-inline >"$OUT/sandbox-probe.json" 2>&1
cat "$OUT/sandbox-probe.json"

status=0
if [ "$run_tests" = 1 ]; then
  "$PY" -m pytest -p no:django -p no:playwright -p no:cacheprovider ${GPU_TESTS:-tests/runner} -m gpu -q -rA ${GPU_PYTEST_ARGS:-} \
      --junitxml="$OUT/gpu-tests.xml" 2>&1 | tee "$OUT/gpu-tests.log"
  status=${PIPESTATUS[0]}
fi
if [ "$run_bench" = 1 ]; then
  "$PY" -m runner bench --device cuda --json ${BENCH_ARGS:-} >"$OUT/bench.json" 2>"$OUT/bench.err" || status=1
  "$PY" -c "import json, sys; from runner.bench import table; print(table(json.load(open(sys.argv[1]))))" \
      "$OUT/bench.json" | tee "$OUT/bench.txt"
  tail -n 30 "$OUT/bench.err"
fi
exit $status
