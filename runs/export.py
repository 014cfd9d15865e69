"""A run written in KernelBench's runs layout (scripts/eval_from_generations.py at the commit that
tests/fixtures/kernelbench pins): `level_{L}_problem_{P}_sample_{S}_kernel.py` per sample and
`eval_results.json`, keyed by problem number, a list of
{sample_id, compiled, correctness, metadata, runtime, runtime_stats} each; `pass_at_k_results.json`
as that script writes it. Correctness and times follow the mode asked for (KernelLab: its verdicts, median
ms; KernelBench: runs/kernelbench_mode.py, mean ms), and each entry's metadata names it.

KernelBench's analysis divides a baseline file's mean by `runtime`; the export writes
`baseline_time_kernellab_eager.json`, the eager time measured beside each problem's sample 0, so
that the analysis reproduces the run's "sample 0" fast_p in that mode. A kernel KernelBench's eval cannot build
(no `load_inline`/`cpp_extension`, e.g. NVRTC through cupy or a C library through ctypes) is
written unchanged and named in `export_notes.json` with the reason.
"""

import json
from pathlib import Path, PurePosixPath

from searches.models import Verdict

from . import scoring
from .selectors import MODE, run_scores

_NOT_COMPILED = (Verdict.COMPILE_ERROR, Verdict.NO_CODE, Verdict.FAILED, Verdict.PENDING, Verdict.EVALUATING)
_KERNELBENCH_BUILDS = ("load_inline", "cpp_extension", "triton")  # its static checker's backends
_STATISTIC = {MODE: "median", "KernelBench": "mean"}


def incompatibility(source: str) -> str:
    """Why KernelBench's eval would not build this kernel as written, or ""."""
    if any(word in source for word in _KERNELBENCH_BUILDS):
        return ""
    if "cupy" in source:
        return ("NVRTC through cupy: KernelBench builds CUDA with torch.utils.cpp_extension.load_inline, and its "
                "static checker refuses a CUDA kernel without load_inline or cpp_extension")
    return ("no load_inline, cpp_extension or triton: KernelBench's static checker refuses it for its backends "
            "(a C library through ctypes runs only on KernelLab's CPU evaluator)")


def _entry(sample: dict, mode: str) -> dict:
    kernel, runtime = sample["kernel"], sample["runtime_ms"]
    timed = sample["correct"] and runtime is not None
    return {
        "sample_id": sample["sample"],
        "compiled": kernel is not None and kernel.status not in _NOT_COMPILED,
        "correctness": sample["correct"],
        "metadata": {"scoring_mode": mode, "verdict": kernel.status if kernel else "none",
                     "reason": kernel.reason if kernel else "", "kernel_code": str(kernel.code) if kernel else "",
                     "hardware": kernel.device_name if kernel else "",
                     # the rule the runner judged by; under KernelBench's mode a "kernellab" verdict was read off
                     "judged_by": sample.get("judged_by", "kernellab")},
        "runtime": runtime if timed else -1.0,
        "runtime_stats": {_STATISTIC[mode]: runtime, "statistic": _STATISTIC[mode]} if timed else {},
    }


def _baseline(row) -> dict:
    """The eager time beside the problem's sample 0 (paired with it on the CPU); otherwise the
    problem's validated eager time, or -1.0 (KernelBench's "not measured"), which no correct
    sample 0 needs."""
    first = next((s for s in row["samples"] if s["sample"] == 0), None)
    if first and first["correct"] and first["runtime_ms"] and first["speedup"]:
        # the runner's KernelBench verdict divides eager's mean by the kernel's; otherwise eager's median
        return {"mean": first["runtime_ms"] * first["speedup"],
                "statistic": "mean" if first.get("source") == "runner" else "median"}
    validated = ((row["problem"].validation or {}).get("baseline") or {}).get("eager_ms")
    return {"mean": validated if validated else -1.0, "statistic": "median"}


def _pass_at_k(results: dict, k_values, mode: str) -> dict:
    problems = {}
    for pid, entries in results.items():
        n, c = len(entries), sum(1 for e in entries if e["correctness"] and e["compiled"])
        problems[pid] = {"total_samples": n, "correct_samples": c,
                         **{f"pass@{k}": scoring.pass_at_k(n, c, k) for k in k_values if k <= n}}
    averages = {f"avg_pass@{k}": sum(p.get(f"pass@{k}", 0) for p in problems.values()) / len(problems)
                for k in k_values} if problems else {}
    return {"averages": averages, "metadata": {"total_problems": len(problems), "scoring_mode": mode},
            "problems": problems}


def export_run(run, out_dir, mode: str = MODE) -> dict:
    """Write the run under `out_dir` (a folder per level when the suite spans several), judged by
    `mode`; returns {"files": n, "notes": {file: reason}, "folders": [...]}."""
    scores = run_scores(run, "eager", mode)
    levels = sorted({r["level"] for r in scores["rows"]}, key=lambda v: (v is None, v or 0))
    out, report = Path(out_dir), {"files": 0, "notes": {}, "folders": []}
    for level in levels:
        folder = out / f"level{level}" if len(levels) > 1 else out
        folder.mkdir(parents=True, exist_ok=True)
        rows = [r for r in scores["rows"] if r["level"] == level]
        _write_level(folder, level, rows, report, mode)
        report["folders"].append(str(folder))
    return report


def _write_level(folder: Path, level, rows, report, mode: str) -> None:
    results, baseline, notes = {}, {}, {}
    for row in rows:
        for sample in row["samples"]:
            kernel = sample["kernel"]
            name = f"level_{level}_problem_{row['number']}_sample_{sample['sample']}_kernel.py"
            (folder / name).write_text(kernel.source)
            report["files"] += 1
            if why := incompatibility(kernel.source):
                notes[name] = why
            results.setdefault(str(row["number"]), []).append(_entry(sample, mode))
        # The analysis drops a problem missing from the baseline file, so every problem is in it.
        baseline[PurePosixPath(row["member"].file_name).name] = _baseline(row)
    ordered = dict(sorted(results.items(), key=lambda item: int(item[0])))
    (folder / "eval_results.json").write_text(json.dumps(ordered, indent=4))
    k_values = range(1, max((len(v) for v in ordered.values()), default=0) + 1)
    (folder / "pass_at_k_results.json").write_text(json.dumps(_pass_at_k(ordered, k_values, mode), indent=4))
    (folder / "baseline_time_kernellab_eager.json").write_text(json.dumps({f"level{level}": baseline}, indent=4))
    (folder / "export_notes.json").write_text(json.dumps({"scoring_mode": mode, "incompatible": notes}, indent=4))
    report["notes"].update(notes)
