"""Time playbook CPU kernels against eager PyTorch with the runs interleaved, at the runner's thread count.

    .venv/bin/python scripts/cpu_interleaved_bench.py softmax-cpu explicit_simd:0 [RECIPE:VARIANT ...]
        [--calls 600] [--rounds 30] [--block 50]

Two schemes, both on the catalog problem's own inputs, one process, torch.no_grad:
- per call: eager and each kernel alternate call by call (order reversed every other turn); the speedup is the
  median of the paired ratios eager/kernel, its 95% CI from the binomial order statistics of those ratios;
- per block: BLOCK calls of eager, then BLOCK calls of each kernel (caches warm on the one op, as in the runner's
  timing loop), ROUNDS times; the speedup per round is median eager / median kernel, CI as above.
The load average is printed with each table: on a shared machine the absolute times move, the ratios less so.
"""

import argparse
import importlib.util
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def median_ci(values):
    ordered = sorted(values)
    n = len(ordered)
    k = max(int(n / 2 - 1.96 * math.sqrt(n) / 2), 0)
    return statistics.median(ordered), ordered[k], ordered[n - 1 - k]


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problem", help="catalog key of a CPU problem, e.g. softmax-cpu")
    parser.add_argument("kernels", nargs="+", help="RECIPE:VARIANT of the problem's family, CPU target")
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--block", type=int, default=50)
    args = parser.parse_args()

    import torch

    import playbook
    from searches.catalog import problems

    problem = next(p for p in problems() if p.key == args.problem)
    threads = max(1, min(8, (os.cpu_count() or 2) // 2))  # the runner's default_threads("cpu")
    torch.set_num_threads(threads)
    folder = Path(tempfile.mkdtemp(prefix="bench-"))
    (folder / "problem.py").write_text(problem.source)
    reference = load(folder / "problem.py", "problem")
    init = reference.get_init_inputs()
    torch.manual_seed(0)
    eager = reference.Model(*init)
    labels, models = ["eager"], [eager]
    for spec in args.kernels:
        slug, variant = spec.split(":")
        recipe = next(r for r in playbook.recipes(problem.family, "cpu") if r.slug == slug)
        path = folder / f"{slug}_{variant}.py"
        path.write_text(playbook.render(problem.source, problem.family, "cpu", recipe, int(variant)))
        model = load(path, f"{slug}_{variant}").ModelNew(*init)
        if list(eager.state_dict()):
            model.load_state_dict(eager.state_dict())
        labels.append(spec)
        models.append(model)
    inputs = reference.get_inputs()

    with torch.no_grad():
        for model in models:
            for _ in range(5):
                model(*inputs)
        calls = [[] for _ in models]
        for i in range(args.calls):
            order = range(len(models)) if i % 2 == 0 else reversed(range(len(models)))
            for j in order:
                start = time.perf_counter()
                models[j](*inputs)
                calls[j].append((time.perf_counter() - start) * 1e3)
        load_calls = open("/proc/loadavg").read().split()[:3]
        blocks = [[] for _ in models]
        for r in range(args.rounds):
            order = range(len(models)) if r % 2 == 0 else reversed(range(len(models)))
            for j in order:
                models[j](*inputs)
                samples = []
                for _ in range(args.block):
                    start = time.perf_counter()
                    models[j](*inputs)
                    samples.append((time.perf_counter() - start) * 1e3)
                blocks[j].append(statistics.median(samples))
        load_blocks = open("/proc/loadavg").read().split()[:3]

    print(f"{problem.name}: {threads} thread(s), torch {torch.__version__}")
    print(f"per call ({args.calls} alternations), loadavg {' '.join(load_calls)}")
    print(f"  eager {statistics.median(calls[0]):.4f} ms")
    for label, times in zip(labels[1:], calls[1:]):
        m, lo, hi = median_ci([e / c for e, c in zip(calls[0], times)])
        print(f"  {label}: {statistics.median(times):.4f} ms, speedup {m:.3f}x, 95% CI [{lo:.3f}, {hi:.3f}]")
    print(f"per block ({args.rounds} rounds of {args.block} calls), loadavg {' '.join(load_blocks)}")
    print(f"  eager {statistics.median(blocks[0]):.4f} ms")
    for label, times in zip(labels[1:], blocks[1:]):
        m, lo, hi = median_ci([e / c for e, c in zip(blocks[0], times)])
        print(f"  {label}: {statistics.median(times):.4f} ms, speedup {m:.3f}x, 95% CI [{lo:.3f}, {hi:.3f}]")


if __name__ == "__main__":
    main()
