"""Validate KernelBench's problems (tests/fixtures/kernelbench) at full size on the GPU and record
which the runner names degenerate (runner/inside/degenerate.py), for docs/BENCHMARKS.md.

    usage (on the GPU host, from the repo root, after `source scripts/gpu_env.sh`):
        OUT=/tmp/out python3 scripts/gpu_degenerate.py [--max-seconds 480] [--parallel 6] [levels ...]

Level 2's problems 80 and 83 come first, then the levels asked for (2 1 3 by default) until the time
is up; $OUT/degenerate.json is rewritten after each problem, so a run cut short keeps what it did.
--parallel validates that many problems at once (their timing still waits for the runner's device lock)."""

import argparse
import concurrent.futures
import json
import os
import time
from pathlib import Path

os.environ.setdefault("KERNELLAB_BASELINE_COMPILE", "0")  # the check does not need torch.compile's baseline

import runner  # noqa: E402

ROOT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kernelbench"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("levels", nargs="*", default=["2", "1", "3"])
    parser.add_argument("--max-seconds", type=float, default=480)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    files = [ROOT / "level2" / "80_Gemm_Max_Subtract_GELU.py", ROOT / "level2" / "83_Conv3d_GroupNorm_Min_Clamp_Dropout.py"]
    for level in args.levels:
        files += [f for f in sorted((ROOT / f"level{level}").glob("*.py"), key=lambda f: int(f.name.split("_")[0]))
                  if f not in files]
    out = Path(os.environ.get("OUT", "/tmp/kernellab-degenerate")) / "degenerate.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    rows, end = [], time.monotonic() + args.max_seconds

    def validate(pool: runner.Pool, file: Path) -> dict | None:
        if time.monotonic() > end:
            return None
        began = time.monotonic()
        try:
            # the last problems get what is left of the call, so the run ends near --max-seconds
            timeout = max(60.0, min(300.0, end - began + 60))
            result = pool.validate(file.read_text(), seed=0, timeout=timeout)
            row = {"status": result["status"], "reason": result["reason"][:300], "degenerate": result.get("degenerate")}
        except Exception as exc:  # a problem too large for the device, say: recorded, not fatal
            row = {"status": "error", "reason": f"{type(exc).__name__}: {exc}"[:300], "degenerate": None}
        return {"file": f"{file.parent.name}/{file.name}", **row, "seconds": round(time.monotonic() - began, 1)}

    with runner.Pool(device="cuda", size=args.parallel) as pool, \
            concurrent.futures.ThreadPoolExecutor(args.parallel) as in_flight:
        for row in in_flight.map(lambda file: validate(pool, file), files):
            if row is None:
                continue
            rows.append(row)
            print(json.dumps(row), flush=True)
            out.write_text(json.dumps({"rows": rows, "degenerate": [r["file"] for r in rows if r["degenerate"]]},
                                      indent=1))


if __name__ == "__main__":
    main()
