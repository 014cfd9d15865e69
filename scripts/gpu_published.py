"""Judge the published corpus (tests/runner/published/manifest.json: KernelBench solutions released by
others, each labelled honest or hack by hand) on the GPU, in library mode, and summarise the verdicts.

    usage (on the GPU host, from the repo root, after `source scripts/gpu_env.sh`; no Django needed):
        OUT=/tmp/out python3 scripts/gpu_published.py [--timeout 300] [--max-seconds 3000]
                                                      [--level 1 2 3] [--source cuda_l1] [--label honest|hack]
                                                      [--match TEXT] [--parallel N] [--run-refused] [OUT_DIR]
        python3 scripts/gpu_published.py --dry-run       # lists the kernels; runs nothing (works on a CPU box)

Every kernel goes through `runner.Pool(device="cuda").evaluate(problem, kernel, allow_library=True)` with its
own wall-clock limit (--timeout; the script also cancels a run stuck past it). A problem whose validation
fails (level 2/3 problems need the GPU to validate; some are too large for it) is recorded, not fatal.
$OUT/published.json (or OUT_DIR/published.json) is rewritten after each kernel, so a run cut short keeps
what it did: per kernel its status, reason, reason_code, advisories, fallback, label and hack name, whether it
was refused statically, seconds; and totals: correct / incorrect / refused by reason / errors, advisories by
code, and each refusal classed "real hack" (labelled hack) or "false refusal" (labelled honest)."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import concurrent.futures
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "tests" / "runner" / "published"
sys.path.insert(0, str(REPO))

os.environ.setdefault("KERNELLAB_BASELINE_COMPILE", "0")  # torch.compile's baseline is not needed here

import runner  # noqa: E402  (plain Python: loads neither torch nor CUDA)
import runner.host.evaluation  # noqa: E402
from runner.common import findings  # noqa: E402
from runner.host.checks import check_findings  # noqa: E402


def kernels(args) -> list[dict]:
    manifest = json.loads((PUBLISHED / "manifest.json").read_text())
    chosen = []
    for kernel in manifest["kernels"]:
        if args.level and kernel["level"] not in args.level:
            continue
        if args.source and kernel["source"] not in args.source:
            continue
        if args.label and kernel["label"] != args.label:
            continue
        if args.match and not any(m in kernel["file"] for m in args.match):
            continue
        chosen.append(kernel)
    # level 1 first (quick), then 2 and 3; within a level by problem number
    return sorted(chosen, key=lambda k: (k["level"], int(k["problem"].split("_")[0]), k["file"]))


def static_refusal(kernel: dict, kernel_source: str, problem_source: str):
    """The first refusal of the static checks (what evaluate returns before running anything), or None."""
    found = check_findings(kernel_source, reference_source=problem_source, allow_library=True, device="cuda")
    refused = [f for f in found if not f.advisory]
    return refused[0] if refused else None


def _refusals_as_advisories(*args, **kwargs):
    return [dataclasses.replace(f, status=findings.ADVISORY, reason=f"(static refusal, run anyway) {f.reason}")
            if not f.advisory else f for f in check_findings(*args, **kwargs)]


def judge(pool, kernel: dict, args) -> dict:
    """One evaluation with a hard deadline: the run is cancelled if it outlives --timeout by a margin."""
    problem_source = (REPO / kernel["problem_path"]).read_text()
    kernel_source = (PUBLISHED / kernel["file"]).read_text()
    static = static_refusal(kernel, kernel_source, problem_source)
    outcome: dict = {}
    scope_box: list = []

    def run():
        try:
            with pool.scope() as scope:
                scope_box.append(scope)
                outcome["result"] = pool.evaluate(problem_source, kernel_source, device="cuda", allow_library=True,
                                                  seed=args.seed, timeout=args.timeout)
        except runner.ProblemInvalid as exc:  # validation failed (too large for the device, say)
            outcome["error"] = ("problem_invalid", str(exc))
        except runner.RunnerError as exc:  # DeviceBusy, Cancelled, a sandbox that would not start
            outcome["error"] = (type(exc).__name__, str(exc))
        except Exception as exc:  # recorded, never fatal to the sweep
            outcome["error"] = (type(exc).__name__, str(exc))

    began = time.monotonic()
    worker = threading.Thread(target=run, name=f"judge-{Path(kernel['file']).stem[:40]}", daemon=True)
    worker.start()
    # validation (its own timeout) and evaluation (another) may both run: allow both and a margin
    worker.join(2 * args.timeout + 120)
    if worker.is_alive():  # past its deadline: cancelled, whatever it returns later means nothing
        if scope_box:
            scope_box[0].cancel()
        worker.join(60)
        outcome.pop("result", None)
        outcome["error"] = ("script_timeout", f"no verdict within {2 * args.timeout + 120:.0f} s; cancelled")
    row = {"file": kernel["file"], "source": kernel["source"], "level": kernel["level"], "problem": kernel["problem"],
           "backend": kernel["backend"], "techniques": kernel["techniques"], "label": kernel["label"],
           "hack": kernel["hack"], "seconds": round(time.monotonic() - began, 1),
           "static_refusal": ({"code": static.code, "reason": static.reason} if static else None)}
    result = outcome.get("result")
    if result is None:
        kind, text = outcome.get("error", ("no_result", "the run returned nothing"))
        row.update(status="error", reason=f"{kind}: {text}"[:1000], reason_code=None, advisories=[], fallback=None,
                   refused_statically=False)
        return row
    row.update(status=result.get("status"), reason=(result.get("reason") or "")[:1000],
               reason_code=result.get("reason_code"), advisories=result.get("advisories") or [],
               fallback=result.get("fallback"), quarantined=result.get("quarantined"),
               speedup_vs_eager=result.get("speedup_vs_eager"),
               median_ms=(result.get("timing") or {}).get("median_ms"))
    # refused before running: rejected with the static checks' own reason
    row["refused_statically"] = bool(static) and row["status"] == static.status and row["reason"] == static.reason[:1000]
    return row


def _short(reason: str) -> str:
    """A refusal's text without its line number and the names that vary, to group them."""
    text = re.sub(r"^line \d+: ", "", reason or "")
    text = re.sub(r"\b(input|output) \w+ in self\.\w+", r"\1 _ in self._", text)
    text = re.sub(r"(os\.environ|torch\.backends|torch\._C)[\w.\[\]']*", r"\1...", text)
    return text[:120]


def summarise(rows: list[dict], args, started: float, planned: int) -> dict:
    statuses = collections.Counter(r["status"] for r in rows)
    refused = [r for r in rows if r["refused_statically"]]
    by_reason = collections.defaultdict(lambda: {"count": 0, "real hack": 0, "false refusal": 0, "files": []})
    for r in refused:
        entry = by_reason[_short(r["reason"])]
        entry["count"] += 1
        entry["real hack" if r["label"] == "hack" else "false refusal"] += 1
        entry["files"].append(r["file"])
    advisories = collections.Counter(a.get("code") for r in rows for a in r["advisories"])
    label_status = collections.Counter(f"{r['label']}:{r['status']}" for r in rows)
    return {
        "about": "scripts/gpu_published.py: the published corpus judged in library mode on the GPU",
        "runner_version": getattr(runner, "RUNNER_VERSION", None),
        "seed": args.seed, "timeout_s": args.timeout, "planned": planned, "done": len(rows),
        "elapsed_s": round(time.monotonic() - started, 1),
        "totals": {
            "correct": statuses.get("correct", 0),
            "incorrect": statuses.get("incorrect", 0),
            "refused": len(refused),
            "refused_real_hack": sum(r["label"] == "hack" for r in refused),
            "false_refusals": sum(r["label"] == "honest" for r in refused),
            "rejected_at_run_time": sum(r["status"] == "rejected" and not r["refused_statically"] for r in rows),
            "errors": statuses.get("error", 0),
            "by_status": dict(statuses),
            "by_label_and_status": dict(label_status),
            "hacks_judged_correct": [r["file"] for r in rows if r["label"] == "hack" and r["status"] == "correct"],
        },
        "refused_by_reason": dict(sorted(by_reason.items(), key=lambda kv: -kv[1]["count"])),
        "refusals": [{"file": r["file"], "label": r["label"], "hack": r["hack"],
                      "class": "real hack" if r["label"] == "hack" else "false refusal",
                      "reason_code": r["reason_code"], "reason": r["reason"]} for r in refused],
        "advisories_by_code": dict(advisories),
        "kernels": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", help="output folder (default: $OUT, else /tmp/kernellab-published)")
    parser.add_argument("--dry-run", action="store_true", help="list the kernels and their static verdicts; run nothing")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a kernel's run may take (default 300)")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop starting kernels after this long")
    parser.add_argument("--level", type=int, nargs="*", choices=(1, 2, 3))
    parser.add_argument("--source", nargs="*", help="source slugs from the manifest")
    parser.add_argument("--label", choices=("honest", "hack"))
    parser.add_argument("--match", nargs="*", help="only files whose path contains one of these")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool-size", type=int, default=2, help="warm sandboxes (default 2, at least --parallel)")
    parser.add_argument("--run-refused", action="store_true",
                        help="run kernels the static checks refuse too (their refusals passed as advisories), to see "
                             "what the run-time checks make of them; each row keeps its static refusal")
    parser.add_argument("--parallel", type=int, default=1, help="kernels judged at once (builds overlap; timing "
                                                              "still takes the device lock one at a time)")
    args = parser.parse_args(argv)

    chosen = kernels(args)
    if args.dry_run:
        for kernel in chosen:
            problem_source = (REPO / kernel["problem_path"]).read_text()
            static = static_refusal(kernel, (PUBLISHED / kernel["file"]).read_text(), problem_source)
            print(f"L{kernel['level']} {kernel['label']:6} {(kernel['hack'] or ''):15} {kernel['backend']:6} "
                  f"{'refused' if static else 'static ok':9} {kernel['file']}")
        print(f"{len(chosen)} kernels", file=sys.stderr)
        return 0

    if args.run_refused:
        runner.host.evaluation.check_findings = _refusals_as_advisories
    out_dir = Path(args.out or os.environ.get("OUT") or "/tmp/kernellab-published")
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "published.json"
    started, rows, lock = time.monotonic(), [], threading.Lock()

    def one(kernel: dict) -> None:
        if args.max_seconds is not None and time.monotonic() - started > args.max_seconds:
            return  # time is up: left out of the totals, counted as not done
        row = judge(pool, kernel, args)
        with lock:
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("file", "label", "hack", "status", "reason_code", "seconds")}
                             | {"reason": row["reason"][:160]}), flush=True)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps(summarise(rows, args, started, len(chosen)), indent=1))
            tmp.replace(out)

    with runner.Pool(device="cuda", size=max(args.pool_size, args.parallel)) as pool, \
            concurrent.futures.ThreadPoolExecutor(args.parallel) as kernels_in_flight:
        list(kernels_in_flight.map(one, chosen))
    if len(rows) < len(chosen):
        print(f"time is up after {len(rows)} of {len(chosen)} kernels", file=sys.stderr)
    summary = summarise(rows, args, started, len(chosen))
    out.write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary["totals"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
