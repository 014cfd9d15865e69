"""`python -m runner bench`: how fast and how steady the runner is on this machine.

- throughput: honest candidates fully evaluated per minute through a warm pool (several
  evaluations in flight, the device lock serialising their GPU work), for a ~1 ms problem
  on CUDA (softmax 4096x65536 fp32: eager ~1.05 ms on an H200);
- compile: seconds to import and build the kernel (NVRTC through cupy on CUDA, the system
  C compiler on CPU), median over the throughput run;
- repeatability: the same kernel evaluated 5 times, spread of the medians (max-min)/min, with
  the SM clock before and after each timed measurement, its tries and why it was noisy
  (`repeats` such measurements in a row; `throughput=False` skips the throughput part);
- agreement: the runner's median against triton.testing.do_bench's (CUDA only).
"""

from __future__ import annotations

import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from . import api

SOFTMAX_PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

def get_inputs():
    return [torch.randn(ROWS, COLS)]

def get_init_inputs():
    return []
'''

CUDA_SOFTMAX_KERNEL = '''
import cupy
import torch
import torch.nn as nn

SOURCE = r"""
__device__ __forceinline__ void merge(float& m, float& s, float om, float os) {
    float nm = fmaxf(m, om);
    s = s * __expf(m - nm) + os * __expf(om - nm);
    m = nm;
}

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, long long cols) {
    const float4* in = reinterpret_cast<const float4*>(x + blockIdx.x * cols);
    float4* out = reinterpret_cast<float4*>(y + blockIdx.x * cols);
    long long n4 = cols / 4;
    float m = -3.402823466e38f, s = 0.0f;
    for (long long c = threadIdx.x; c < n4; c += blockDim.x) {
        float4 v = in[c];
        float local = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
        float e = __expf(v.x - local) + __expf(v.y - local) + __expf(v.z - local) + __expf(v.w - local);
        merge(m, s, local, e);
    }
    for (int o = 16; o > 0; o >>= 1) merge(m, s, __shfl_xor_sync(0xffffffff, m, o), __shfl_xor_sync(0xffffffff, s, o));
    __shared__ float sm[32], ss[32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < warps ? sm[lane] : -3.402823466e38f;
        s = lane < warps ? ss[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) merge(m, s, __shfl_xor_sync(0xffffffff, m, o), __shfl_xor_sync(0xffffffff, s, o));
        if (lane == 0) { sm[0] = m; ss[0] = s; }
    }
    __syncthreads();
    m = sm[0];
    float inv = 1.0f / ss[0];
    for (long long c = threadIdx.x; c < n4; c += blockDim.x) {
        float4 v = in[c];
        out[c] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv, __expf(v.w - m) * inv);
    }
}
"""
KERNEL = cupy.RawModule(code=SOURCE, options=("-arch=sm_90", "--use_fast_math")).get_function("softmax_rows")


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            KERNEL((x.shape[0],), (1024,), (cupy.uint64(x.data_ptr()), cupy.uint64(y.data_ptr()),
                                           cupy.int64(x.shape[1])))
        return y
'''

CPU_SOFTMAX_KERNEL = '''
import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn

SOURCE = r"""
#include <math.h>
#include <stdint.h>
void softmax_rows(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *in = x + r * cols;
        float *out = y + r * cols;
        float m = in[0];
        for (int64_t c = 1; c < cols; c++) m = in[c] > m ? in[c] : m;
        double s = 0.0;
        for (int64_t c = 0; c < cols; c++) { float e = expf(in[c] - m); out[c] = e; s += e; }
        float inv = (float)(1.0 / s);
        for (int64_t c = 0; c < cols; c++) out[c] *= inv;
    }
}
"""


def _build():
    folder = tempfile.mkdtemp()
    src, lib = os.path.join(folder, "softmax.c"), os.path.join(folder, "softmax.so")
    with open(src, "w") as f:
        f.write(SOURCE)
    subprocess.run(["cc", "-O3", "-march=native", "-shared", "-fPIC", src, "-o", lib, "-lm"], check=True,
                   capture_output=True, text=True)
    so = ctypes.CDLL(lib)
    so.softmax_rows.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    return so


LIB = _build()


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        LIB.softmax_rows(x.data_ptr(), y.data_ptr(), x.shape[0], x.shape[1])
        return y
'''

SHAPES = {"cuda": (4096, 65536), "cpu": (256, 4096)}


def problem_source(device: str) -> str:
    rows, cols = SHAPES[device]
    return SOFTMAX_PROBLEM.replace("ROWS", str(rows)).replace("COLS", str(cols))


def kernel_source(device: str) -> str:
    return CUDA_SOFTMAX_KERNEL if device == "cuda" else CPU_SOFTMAX_KERNEL


def run(device: str = "cpu", pool_size: int | None = None, candidates: int | None = None, *,
        repeats: int = 1, throughput: bool = True) -> dict:
    # Each evaluation takes two warm sandboxes, and a replacement is ready a warm-up (~9 s on the H200)
    # later: four per evaluation in flight, so the pool does not bound the bench (8 did, at ~29/min).
    pool_size = pool_size or (16 if device == "cuda" else 1)
    workers = 4 if device == "cuda" else 1  # evaluations in flight, as several workers would run
    candidates = candidates or (30 if device == "cuda" else 6)
    problem, kernel = problem_source(device), kernel_source(device)
    report = {"device": device, "pool": pool_size, "problem": f"softmax {SHAPES[device]} fp32"}
    with api.Pool(device=device, size=pool_size) as pool:
        report["pool"] = pool.size  # the warm sandboxes it really keeps (at least two)
        started = time.monotonic()
        validation = pool.validate(problem, seed=0)
        report["validate_s"] = time.monotonic() - started
        if validation["status"] != "ok":
            raise api.RunnerError(f"bench problem invalid: {validation['reason']}")
        report["environment"] = validation["environment"]
        report["baseline"] = validation["baseline"]

        report["repeatability"] = [repeatability(pool, problem, kernel, 100 + 10 * i) for i in range(repeats)]
        medians = report["repeatability"][-1]["medians_ms"]
        report["repeat_medians_ms"], report["repeat_spread"] = medians, report["repeatability"][-1]["spread"]
        report["kernel_median_ms"] = statistics.median(medians)
        report["speedup_vs_eager"], report["speedup_vs_compile"] = report["repeatability"][0].pop("speedups")
        if throughput:
            _throughput(report, pool, problem, kernel, workers, candidates)
        if device == "cuda":
            _agreement(report, pool, device, problem, kernel)
    return report


def repeatability(pool, problem: str, kernel: str, seed: int) -> dict:
    """The same kernel evaluated 5 times: the spread of the medians, and per evaluation the SM
    clock (MHz) before and after its last timed try, how many tries it took, and any noise."""
    results = [pool.evaluate(problem, kernel, seed=seed + i) for i in range(5)]
    _all_correct(results)
    medians = [r["timing"]["median_ms"] for r in results]
    tries = [[m for m in r["measurements"] if m["what"] == "candidate"] for r in results]
    last = [t[-1] if t else {} for t in tries]
    return {"medians_ms": medians, "spread": (max(medians) - min(medians)) / min(medians),
            "sm_mhz": [m.get("sm_mhz") for m in last], "tries": [len(t) for t in tries],
            "batch_slope_ms": [next((m.get("slope_ms") for m in r["measurements"] if m["what"] == "batch"), None)
                               for r in results],
            "samples": [r["timing"]["n"] for r in results], "noisy": [r["noisy"] for r in results],
            "speedups": (results[0]["speedup_vs_eager"], results[0]["speedup_vs_compile"])}


def _throughput(report, pool, problem, kernel, workers, candidates) -> None:
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        results = list(executor.map(lambda i: pool.evaluate(problem, kernel, seed=1000 + i), range(candidates)))
    elapsed = time.monotonic() - started
    _all_correct(results)
    report["throughput"] = {"candidates": candidates, "seconds": elapsed,
                            "per_minute": candidates * 60.0 / elapsed,
                            "seconds_per_candidate": elapsed / candidates, "in_flight": workers,
                            "noisy": sum(1 for r in results if r["noisy"])}  # correct, but quarantined
    report["phases_mean_s"] = {
        name: statistics.fmean(r["phases"].get(name, 0.0) for r in results)
        for name in ("warm_wait_s", "build_s", "device_wait_s", "correctness_s", "timing_s", "truths_wait_s", "truths_s",
                     "sandbox_s", "judge_s")}
    # Each evaluation takes two warm sandboxes, and a replacement is warm a warm-up later: once the
    # sandboxes warm at the start are used, the pool serves at most pool / 2 evaluations per warm-up.
    warm_up = statistics.fmean(r["phases"].get("warm_up_s", 0.0) for r in results)
    report["throughput"]["warm_up_s"] = warm_up
    report["throughput"]["pool_bound_per_minute"] = report["pool"] / 2 / warm_up * 60 if warm_up > 0 else None
    report["compile_s_median"] = statistics.median(r["compile"]["seconds"] for r in results)
    report["compile_s_max"] = max(r["compile"]["seconds"] for r in results)


def _agreement(report, pool, device, problem, kernel) -> None:
    sandbox = pool.take()
    outcome = sandbox.run({"job": "do_bench", "device": device, "seed": 0, "problem_source": problem,
                           "kernel_source": kernel}, 300)
    agreement = outcome.result or {"error": outcome.reason, "stderr": outcome.stderr[-1500:]}
    agreement.update(measurements=sandbox.measurements.of("do_bench"), noisy=sandbox.measurements.noisy("do_bench"))
    report["do_bench"] = agreement
    if outcome.result and outcome.result.get("do_bench_ms"):
        report["do_bench_diff"] = (report["kernel_median_ms"] - agreement["do_bench_ms"]) / agreement["do_bench_ms"]


def _all_correct(results: list[dict]) -> None:
    for result in results:
        if result["status"] != "correct":
            raise api.RunnerError(f"bench kernel judged {result['status']}: {result['reason']}")


def table(report: dict) -> str:
    env = report.get("environment", {})
    rows = [
        ("device", f"{env.get('device_name')} (torch {env.get('torch')}, cuda {env.get('cuda')}, "
                   f"driver {env.get('driver')}, isolation {env.get('isolation')})"),
        ("problem", report["problem"]),
        ("baseline eager / torch.compile", f"{_ms(report['baseline']['eager_ms'])} / "
                                           f"{_ms(report['baseline']['compile_ms'])}"),
        ("kernel median (5 evaluations)", _ms(report["kernel_median_ms"])),
        ("speedup vs eager / compile", f"{_x(report['speedup_vs_eager'])} / {_x(report['speedup_vs_compile'])}"),
    ]
    for i, measured in enumerate(report["repeatability"], 1):
        clocks = ", ".join("-".join(map(str, c)) if c else "n/a" for c in measured["sm_mhz"])
        rows.append((f"repeatability {i}: spread of 5 medians", f"{measured['spread'] * 100:.2f}% (target <= 2%); "
                     f"SM MHz {clocks}; tries {measured['tries']}; noisy {sum(1 for n in measured['noisy'] if n)}"))
    if "throughput" in report:
        rows += [
            ("compile (import + build) median / max",
             f"{report['compile_s_median']:.3f} s / {report['compile_s_max']:.3f} s"),
            ("throughput", f"{report['throughput']['per_minute']:.1f} candidates/min "
                           f"({report['throughput']['candidates']} in {report['throughput']['seconds']:.1f} s, "
                           f"pool {report['pool']}, {report['throughput']['in_flight']} in flight; "
                           f"noisy {report['throughput'].get('noisy', 0)})"),
            ("warm-up / the pool's bound", f"{report['throughput'].get('warm_up_s', 0):.2f} s per sandbox / "
                                         f"{report['throughput'].get('pool_bound_per_minute') or 0:.1f} "
                                         f"candidates/min in a steady state (pool / 2 per warm-up)"),
            ("phases per candidate (mean)",
             ", ".join(f"{k[:-2]} {v:.2f}s" for k, v in report["phases_mean_s"].items()))]
    rows.append(("validate (first, with baselines)", f"{report['validate_s']:.1f} s"))
    if "do_bench" in report:
        agreement = report["do_bench"]
        rows.append(("triton do_bench median", _ms(agreement.get("do_bench_ms"))))
        rows.append(("runner median, same process", _ms(agreement.get("runner_ms"))))
        if "do_bench_diff" in report:
            rows.append(("runner vs do_bench", f"{report['do_bench_diff'] * 100:+.2f}% (target within 5%)"))
        if agreement.get("noisy"):
            rows.append(("do_bench measured while disturbed", agreement["noisy"]))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def _ms(value) -> str:
    return "n/a" if value is None else f"{value:.4f} ms"


def _x(value) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def main(*, device: str, pool_size: int | None, candidates: int | None, as_json: bool, repeats: int = 1,
         throughput: bool = True) -> int:
    report = run(device, pool_size, candidates, repeats=repeats, throughput=throughput)
    print(json.dumps(report, indent=2, default=str) if as_json else table(report))
    return 0
