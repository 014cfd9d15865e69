#!/usr/bin/env python3
"""Check every playbook CUDA kernel on the catalog's GPU problems, at full size, on a GPU host.

    python3 scripts/gpu_playbook_check.py [--keys KEY,KEY] [--recipes SLUG,SLUG] [--no-compile] [--out DIR]

For each problem: float64 truth on two input distributions (the problem's own and a large
offset, mean ~1000 / std ~0.1), the error ratio max|y - truth| / (atol + rtol|truth|) with
atol = rtol = 1e-4 (a kernel passes at <= 1, or at <= 2x the fp32 reference's own ratio, as
the runner judges), then the median time from triton.testing.do_bench (L2 flushed between
calls) against eager PyTorch and torch.compile (PyTorch's default TF32 settings).
Each problem runs in a child process, restarted past a kernel that kills its CUDA context.
Needs torch, cupy and triton; no Django (imports only searches.catalog and the playbook).
Prints a table and writes playbook_check.json (and .txt) to --out (default $OUT or .).
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from searches.catalog import get, problems  # noqa: E402
import playbook  # noqa: E402

MISSION = ("matmul-4096x4096", "conv2d-100x3x224x224", "softmax-4096x65536", "layernorm-16x64x256x256",
           "conv-relu-maxpool-100x3x224x224")
ATOL = RTOL = 1e-4
ONLY: set[str] | None = None  # --recipes: measure only these recipe slugs


def kernels_of(problem):
    for recipe in playbook.recipes(problem.family, "cuda"):
        if ONLY is not None and recipe.slug not in ONLY:
            continue
        for variant in range(len(recipe.variants)):
            yield recipe, variant


# -- child: one problem --------------------------------------------------------------------

def _module(source: str, name: str):
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def _error(y, truth, torch):
    y, truth = y.double(), truth.double()
    return ((y - truth).abs() / (ATOL + RTOL * truth.abs())).max().item()


def run_problem(key: str, skip: int, results_path: Path, with_compile: bool) -> None:
    import torch
    import triton.testing

    problem = get(key)
    spec = _module(problem.source, "problem")
    torch.manual_seed(0)
    init = spec.get_init_inputs()
    reference = spec.Model(*init).cuda().eval()
    base = [x.cuda() if hasattr(x, "cuda") else x for x in spec.get_inputs()]
    distributions = {"normal": base,
                     "offset": [x * 0.1 + 1000.0 if getattr(x, "is_floating_point", lambda: False)() else x
                                for x in base]}
    truth_model = copy.deepcopy(reference).double()
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, False
    with torch.no_grad():
        truth = {name: truth_model(*[x.double() for x in xs]) for name, xs in distributions.items()}
        ref_err = {name: _error(reference(*xs), truth[name], torch) for name, xs in distributions.items()}
    del truth_model
    torch.backends.cudnn.allow_tf32 = True  # PyTorch's defaults for the baselines
    emit = results_path.open("a")

    def record(**row):
        emit.write(json.dumps({"key": key, **row}) + "\n")
        emit.flush()

    if skip == 0:
        with torch.no_grad():
            eager_ms = triton.testing.do_bench(lambda: reference(*base), return_mode="median")
            compile_ms = None
            if with_compile:
                compiled = torch.compile(reference)
                compiled(*base)
                compile_ms = triton.testing.do_bench(lambda: compiled(*base), return_mode="median")
        record(kind="baseline", eager_ms=eager_ms, compile_ms=compile_ms, ref_err=ref_err,
               device=torch.cuda.get_device_name(), torch=torch.__version__)
    for index, (recipe, variant) in enumerate(kernels_of(problem)):
        if index < skip:
            continue
        row = {"kind": "kernel", "index": index, "recipe": recipe.slug, "title": recipe.title, "variant": variant,
               "params": recipe.variants[variant]}
        record(**row, status="started")
        try:
            started = time.perf_counter()
            kernel = _module(playbook.render(problem.source, problem.family, "cuda", recipe, variant, line_marks=True),
                             "kernel")  # compiler messages point into playbook/kernels/
            model = kernel.ModelNew(*init).cuda()
            model.load_state_dict(reference.state_dict())
            compile_s = time.perf_counter() - started
            errors = {}
            with torch.no_grad():
                for name, xs in distributions.items():
                    errors[name] = _error(model(*xs), truth[name], torch)
                torch.cuda.synchronize()
                ms = triton.testing.do_bench(lambda: model(*base), return_mode="median")
            passed = all(errors[n] <= 1.0 or errors[n] <= 2.0 * ref_err[n] for n in errors)
            record(**row, status="correct" if passed else "incorrect", err=errors, ms=ms, compile_s=compile_s)
        except Exception as error:  # noqa: BLE001 - a failed kernel is a result, not a crash of the check
            record(**row, status="error", error=f"{type(error).__name__}: {error}"[:2000])
            if "cuda" in str(error).lower() and "illegal" in str(error).lower():
                raise
    emit.close()


# -- parent: all problems ------------------------------------------------------------------

def check(keys, with_compile: bool, out: Path) -> list[dict]:
    results_path = out / "playbook_check.jsonl"
    results_path.write_text("")
    for key in keys:
        total, skip = len(list(kernels_of(get(key)))), 0
        while skip <= total:
            command = [sys.executable, __file__, "--child", key, "--skip", str(skip), "--out", str(out)]
            if ONLY is not None:
                command += ["--recipes", ",".join(sorted(ONLY))]
            try:
                code = subprocess.run(command + ([] if with_compile else ["--no-compile"]), timeout=300).returncode
            except subprocess.TimeoutExpired:  # a spinning kernel: only killing the process recovers
                code = "timeout (300 s)"
            rows = [json.loads(line) for line in results_path.read_text().splitlines()]
            mine = [r for r in rows if r["key"] == key and r["kind"] == "kernel"]
            if code == 0:
                break
            last = max((r["index"] for r in mine), default=-1)
            with results_path.open("a") as handle:  # the kernel that was running when the child died
                handle.write(json.dumps({"key": key, "kind": "kernel", "index": last, "status": "crashed",
                                         "error": f"child process ended: {code}"}) + "\n")
            skip = last + 1
    return [json.loads(line) for line in results_path.read_text().splitlines()]


def summarise(rows: list[dict], keys) -> tuple[dict, str]:
    report, lines = {}, []
    lines.append(f"{'problem':34} {'eager ms':>9} {'compile ms':>10} {'best kernel':44} {'ms':>8} "
                 f"{'x eager':>8} {'x compile':>9} correct")
    detail = []
    for key in keys:
        base = next((r for r in rows if r["key"] == key and r["kind"] == "baseline"), {})
        final = {}
        for row in rows:
            if row["key"] == key and row["kind"] == "kernel" and row.get("status") != "started":
                final[row["index"]] = {**final.get(row["index"], {}), **row}
        kernels = [final[i] for i in sorted(final)]
        good = [k for k in kernels if k["status"] == "correct"]
        best = min(good, key=lambda k: k["ms"]) if good else None
        eager, compiled = base.get("eager_ms"), base.get("compile_ms")
        report[key] = {"baseline": base, "kernels": kernels, "best": best}
        fmt = lambda v: f"{v:.3f}" if isinstance(v, float) else "-"  # noqa: E731
        ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "-"  # noqa: E731
        name = f"{best['recipe']} v{best['variant']}" if best else "(none correct)"
        lines.append(f"{key:34} {fmt(eager):>9} {fmt(compiled):>10} {name:44} {fmt(best and best['ms']):>8} "
                     f"{ratio(eager, best and best['ms']):>8} {ratio(compiled, best and best['ms']):>9} "
                     f"{len(good)}/{len(kernels)}")
        for k in kernels:
            errs = k.get("err") or {}
            detail.append(f"  {key:32} {k.get('recipe', '?'):20} v{k.get('variant', '?')} {k['status']:9} "
                          f"{fmt(k.get('ms')):>9} ms  err " + " ".join(f"{n}={v:.3g}" for n, v in errs.items())
                          + (f"  {k.get('error', '')[:160]}" if k.get("error") else ""))
    return report, "\n".join(lines + ["", "per kernel:"] + detail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", default=",".join(MISSION), help="catalog keys (cuda problems)")
    parser.add_argument("--recipes", default="", help="only these recipe slugs (default: every recipe)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--child")
    parser.add_argument("--skip", type=int, default=0)
    args = parser.parse_args()
    global ONLY
    ONLY = {r for r in args.recipes.split(",") if r} or None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.child:
        run_problem(args.child, args.skip, out / "playbook_check.jsonl", not args.no_compile)
        return
    keys = [k for k in args.keys.split(",") if k] if args.keys != "all" else [
        p.key for p in problems() if p.device == "cuda"]
    rows = check(keys, not args.no_compile, out)
    report, table = summarise(rows, keys)
    print(table)
    stamp = time.strftime("%Y-%m-%d")
    (out / "playbook_check.json").write_text(json.dumps({"date": stamp, "problems": report}, indent=1))
    (out / "playbook_check.txt").write_text(f"{stamp}\n{table}\n")


if __name__ == "__main__":
    main()
