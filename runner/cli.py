"""`python -m runner validate|evaluate|bench|probe`: a thin wrapper over the Python API.

Exit status 0 whenever a verdict was produced (whatever it says); 2 for usage errors,
an unreadable file, or an invalid problem given to evaluate."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import api
from .common import rules


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m runner", description="Judge kernels in sandboxes.")
    commands = top.add_subparsers(dest="command", required=True)

    validate = commands.add_parser("validate", help="check a problem module and time its baselines")
    validate.add_argument("problem", type=Path)
    _common(validate)

    evaluate = commands.add_parser("evaluate", help="judge a kernel against a problem")
    evaluate.add_argument("problem", type=Path)
    evaluate.add_argument("kernel", type=Path)
    _common(evaluate)
    evaluate.add_argument("--atol", type=float)
    evaluate.add_argument("--rtol", type=float)
    evaluate.add_argument("--allow-library", action="store_true",
                          help="allow forward to compute with PyTorch/library calls")
    evaluate.add_argument("--rule", choices=rules.RULES + tuple(rules.ALIASES), default=rules.KERNELLAB,
                          help="the correctness rule: KernelLab's (default), KernelBench's v0.1 (atol = rtol = 1e-2) "
                               "or its main branch's (1e-4 for fp32); runner/common/rules.py")
    evaluate.add_argument("--compile-only", action="store_true",
                          help="stop once the kernel builds: status compiled, or why not (nothing judged)")
    evaluate.add_argument("--untimed", action="store_true",
                          help="judge its correctness only, nothing timed (no speed, no profile)")
    evaluate.add_argument("--counters", action="store_true",
                          help="on the GPU, Nsight Compute's counters of one call in its profile (where the host "
                               "lets the sandbox's user read them)")

    bench = commands.add_parser("bench", help="evaluation throughput, repeatability and timing agreement")
    bench.add_argument("--device", choices=api.DEVICES, default="cpu")
    bench.add_argument("--pool", type=int, default=None, help="warm sandboxes (default: 16 on cuda, 1 on cpu)")
    bench.add_argument("--candidates", type=int, default=None, help="candidates for the throughput run")
    bench.add_argument("--repeats", type=int, default=1, help="repeatability measurements in a row (default 1)")
    bench.add_argument("--no-throughput", action="store_true", help="skip the throughput part")
    bench.add_argument("--json", action="store_true")

    probe = commands.add_parser("probe", help="what works inside a sandbox here (uid, filter, CUDA, NVRTC, ...)")
    probe.add_argument("--device", choices=api.DEVICES, default="cpu")
    probe.add_argument("--load-inline", action="store_true", help="also build a load_inline extension (slow)")
    return top


def _common(command) -> None:
    command.add_argument("--device", choices=api.DEVICES, default="cpu")
    command.add_argument("--seed", type=int)
    command.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit in seconds (default 300)")
    command.add_argument("--json", action="store_true", help="print the result as JSON")
    command.add_argument("--baselines", type=lambda text: [k for k in text.split(",") if k], default=[],
                         help="more baselines beside eager and torch.compile's default, comma-separated: "
                              "reduce-overhead, max-autotune, cudagraph (CUDA-only ones skipped elsewhere, with why)")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "bench":
            from . import bench

            return bench.main(device=args.device, pool_size=args.pool, candidates=args.candidates,
                              as_json=args.json, repeats=max(1, args.repeats), throughput=not args.no_throughput)
        if args.command == "probe":
            return _probe(args.device, args.load_inline)
        problem = _read(args.problem)
        if args.command == "validate":
            result = api.validate(problem, device=args.device, timeout=args.timeout, seed=args.seed,
                                  more_baselines=args.baselines)
        else:
            result = api.evaluate(problem, _read(args.kernel), device=args.device, seed=args.seed,
                                  timeout=args.timeout, atol=args.atol, rtol=args.rtol,
                                  allow_library=args.allow_library, rule=args.rule,
                                  more_baselines=args.baselines, compile_only=args.compile_only,
                                  untimed=args.untimed, counters=args.counters)
    except api.RunnerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else summary(result))
    return 0


def _probe(device: str, load_inline: bool) -> int:
    from .host.sandbox import Sandbox

    sandbox = Sandbox(device)
    environment = sandbox.wait_ready()
    outcome = sandbox.run({"job": "probe", "device": device, "load_inline": load_inline}, 600.0)
    print(json.dumps({"environment": environment, "limits": sandbox.describe_limits(),
                      "probe": outcome.result, "status": outcome.status, "reason": outcome.reason,
                      "stderr": outcome.stderr[-2000:] if outcome.result is None else ""}, indent=2))
    return 0 if outcome.result is not None else 1


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise api.RunnerError(f"cannot read {path}: {exc.strerror}") from None


def summary(result: dict) -> str:
    lines = [f"status: {result['status']}" + (f" ({result['reason']})" if result.get("reason") else "")]
    timing = result.get("timing")
    if timing:
        lo, hi = timing["ci95_ms"]
        lines.append(f"median {timing['median_ms']:.4f} ms (95% CI {lo:.4f}-{hi:.4f}, n={timing['n']}, "
                     f"outliers {timing['outliers']})")
    baseline = result.get("baseline") or {}
    if baseline.get("eager_ms") is not None:
        lines.append(f"eager {baseline['eager_ms']:.4f} ms, torch.compile "
                     f"{baseline['compile_ms'] if baseline['compile_ms'] is None else round(baseline['compile_ms'], 4)} ms")
    rule, kernelbench = result.get("rule") or {}, result.get("kernelbench") or {}
    if rule.get("name", rules.KERNELLAB) != rules.KERNELLAB:
        lines.append(f"rule: {rule['name']} ({rule['version']}): allclose to the reference ({rule['reference']}), "
                     f"{rule['trials']} trials")
    if kernelbench.get("speedup_vs_eager"):
        lines.append(f"KernelBench's statistic: mean {kernelbench['mean_ms']:.4f} ms, eager mean "
                     f"{kernelbench['eager_mean_ms']:.4f} ms, speedup {kernelbench['speedup_vs_eager']:.2f}x")
    for kind, row in (baseline.get("more") or {}).items():
        speedup = (result.get("speedup_vs_more") or {}).get(kind)
        lines.append(f"{kind}: skipped ({row['skipped']})" if row["ms"] is None else
                     f"{kind} {row['ms']:.4f} ms" + (f", speedup {speedup:.2f}x" if speedup else ""))
    if result.get("speedup_vs_eager"):
        lines.append(f"speedup vs eager {result['speedup_vs_eager']:.2f}x"
                     + (f", vs torch.compile {result['speedup_vs_compile']:.2f}x" if result.get("speedup_vs_compile") else ""))
    paired = result.get("paired")
    if paired:
        lo, hi = paired["speedup_ci95"]
        lines.append(f"not paired ({paired['dropped']}): vs eager from the validation's baseline" if paired["dropped"] else
                     f"vs eager paired: eager {paired['eager_ms']:.4f} ms in {paired['blocks']} blocks between the "
                     f"kernel's, 95% CI {lo:.2f}-{hi:.2f}x")
    if result.get("quarantined"):
        lines.append(f"QUARANTINED: {result['quarantine_reason']}")
    if result.get("judged_again"):
        lines.append(f"judged twice: {result['judged_again']}; this verdict is the second evaluation's")
    if result.get("fallback"):
        lines.append(f"fallback: it {result['fallback']}")
    lines += [f"advisory ({a['code']}): {a['reason']}" for a in result.get("advisories") or []]
    profile = result.get("profile")
    if profile:
        lines.append(f"profile: {profile['bottleneck'] or 'no bottleneck inferred'} ({profile['why']}); "
                     f"counters: {profile['counters']}")
    if result.get("family"):
        lines.append(f"family: {result['family']}")
    return "\n".join(lines)
