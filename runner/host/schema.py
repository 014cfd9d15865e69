"""The shape of everything a sandbox may send the parent, checked before any of it is used.

A sandbox runs untrusted code, so its messages are untrusted input: each field's type,
range and size is checked here, unknown fields are refused, and the timing summary is
recomputed from the samples rather than believed. A message that fails becomes a
`rejected` verdict naming the field; nothing here raises on bad input. A candidate's sandbox
cannot claim correctness at all: its `correctness` is dropped here and the trusted judge's
(referee.py, checked by `correctness`) is the one used.
"""

from __future__ import annotations

import json
import math
import re

from ..common import counters, findings, timing
from ..common.baselinekinds import MORE_BASELINES

STATUSES = ("correct", "incorrect", "rejected", "compile_error", "runtime_error", "timeout", "crashed", "oom")
MAX_TEXT = 20_000
MAX_SAMPLES = 100_000
MAX_DISTRIBUTIONS = 32
MAX_OUTPUTS = 64
MAX_DEPTH = 32  # the deepest message the runner sends nests about 10 levels (a verdict's exchange entries)


class Malformed(Exception):
    pass


def _text(value, where: str, limit: int = MAX_TEXT, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise Malformed(f"{where} is not text")
    if len(value) > limit:
        raise Malformed(f"{where} is longer than {limit} characters")
    return value


def _number(value, where: str, *, optional: bool = False, low: float = 0.0, high: float = math.inf,
            positive: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Malformed(f"{where} is not a number")
    if not math.isfinite(value) or value < low or value > high or (positive and value <= 0):
        raise Malformed(f"{where} = {value!r} is out of range")
    return value


def _integer(value, where: str, low: int = 0, high: int = 2**62) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise Malformed(f"{where} is not an integer in {low}..{high}")
    return value


def _bool(value, where: str, optional: bool = False) -> bool | None:
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        raise Malformed(f"{where} is not true/false")
    return value


def _dict(value, where: str, allowed: tuple[str, ...]) -> dict:
    if not isinstance(value, dict):
        raise Malformed(f"{where} is not an object")
    unknown = [k for k in value if k not in allowed]
    if unknown:
        raise Malformed(f"{where} has unknown field {str(unknown[0])[:40]!r}")
    return value


# --- one line of the verdict channel --------------------------------------------------------

# A JSON string, or an unterminated one up to the end: linear (possessive, and always matches at a quote)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_ONE_KIND = bytes.maketrans(b"{}", b"[]")  # which kind of bracket closes which is json's to check
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class Refused(dict):
    """A line of the verdict channel refused unread, and why (`why`): no JSON can make one."""


def message(line: bytes, limit: int):
    """One line of the verdict channel, parsed: the JSON value; None for a line that is not JSON
    (noise: the nonce check drops anything else); Refused for a line longer than `limit` bytes or
    nested deeper than MAX_DEPTH, before json's decoder recurses into it. Never raises."""
    deep = Refused(why=f"a message nested deeper than {MAX_DEPTH} levels")
    if len(line) > limit:
        return Refused(why=f"a message longer than {limit // (1024 * 1024)} MB")
    try:
        text = line.decode()  # UTF-8 only: then no byte of a multi-byte character looks like a bracket
    except ValueError:
        return None
    if _deeper_than(line, MAX_DEPTH):
        return deep
    try:
        return json.loads(text)
    except RecursionError:  # not reached after the check above; json raises it past ~1000 levels
        return deep
    except ValueError:
        return None


def _deeper_than(line: bytes, limit: int) -> bool:
    """Whether brackets outside JSON strings nest past `limit` (an unclosed bracket counts as
    nesting on). Each pass removes the innermost pairs, so `limit` passes empty any line within
    it; all of it at C speed, linear per pass."""
    if line.count(b"[") + line.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", line).translate(_ONE_KIND, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace(b"[]", b"")
    return b"[" in brackets


# --- evaluation -----------------------------------------------------------------------------

EVALUATION_KEYS = ("status", "reason", "reason_code", "precision", "compile", "correctness", "timing",
                   "device_fault", "phases", "log", "exchange", "flag_baseline", "fallback", "build")
BUILD_KERNEL_KEYS = ("name", "registers", "shared_bytes", "grid", "block", "local_bytes", "launches", "time_share")
BUILD_DEVICE_KEYS = ("name", "sm_count", "warp_size", "max_threads_per_sm", "registers_per_sm", "shared_mem_per_sm")
FLAG_KEYS = ("cudnn.benchmark", "cudnn.allow_tf32", "cuda.matmul.allow_tf32", "float32_matmul_precision")
MAX_TRIALS = 64
MAX_CALLS = 256
MAX_SWAPS = 8  # runner/inside/replay.py's IdentitySwap.LIMIT
DISTRIBUTION_KEYS = ("name", "trials", "err", "ref_fp32_err", "max_abs_err", "skipped", "passed", "skip_reason",
                     "mismatch")
TIMING_KEYS = ("median_ms", "mean_ms", "std_ms", "min_ms", "max_ms", "n", "ci95_ms", "outliers", "samples_ms")


def evaluation(raw, built_only: bool = False) -> dict:
    """A clean copy of a sandbox's evaluation result; raises Malformed. `built_only`: a build check's, untimed."""
    raw = _dict(raw, "the verdict", EVALUATION_KEYS)
    status = raw.get("status")
    if status not in STATUSES:
        raise Malformed(f"status {str(status)[:40]!r} is not a verdict")
    clean = {"status": status, "reason": _text(raw.get("reason", ""), "reason", 4000),
             "precision": _text(raw.get("precision"), "precision", 64, optional=True),
             "device_fault": bool(_bool(raw.get("device_fault", False), "device_fault")),
             "log": _text(raw.get("log", ""), "log"),
             "reason_code": raw.get("reason_code")}
    if clean["reason_code"] not in (None, *findings.CODES):
        raise Malformed(f"reason_code {str(clean['reason_code'])[:40]!r} is not a known code")
    if clean["reason_code"] is not None and status == "correct":
        raise Malformed("a correct verdict with a reason_code")
    if clean["reason_code"] is None and status == "rejected":
        clean["reason_code"] = findings.RULE
    compile_ = _dict(raw.get("compile") or {"seconds": None, "log": ""}, "compile", ("seconds", "log"))
    clean["compile"] = {"seconds": _number(compile_.get("seconds"), "compile.seconds", optional=True, high=86400),
                        "log": _text(compile_.get("log", ""), "compile.log")}
    clean["correctness"] = None  # never the sandbox's to say
    clean["timing"] = _timing(raw.get("timing"))
    clean["exchange"] = _exchange(raw.get("exchange"))
    clean["flag_baseline"] = _flag_baseline(raw.get("flag_baseline"))
    clean["fallback"] = _text(raw.get("fallback"), "fallback", 400, optional=True)
    clean["build"] = _build(raw.get("build"))
    phases = _dict(raw.get("phases") or {}, "phases", ("build_s", "device_wait_s", "correctness_s", "timing_s"))
    clean["phases"] = {k: _number(v, f"phases.{k}", high=86400) for k, v in phases.items()}
    if status == "correct" and clean["timing"] is None and not built_only:
        raise Malformed("a verdict that found nothing wrong needs a timing")
    return clean


def _build(raw) -> dict | None:
    """The launched kernels' resources (runner/inside/kernelattrs.py): advisory figures for the profile."""
    if raw is None:
        return None
    raw = _dict(raw, "build", ("kernels", "device"))
    device = _dict(raw.get("device") or {}, "build.device", BUILD_DEVICE_KEYS)
    clean_device = {k: _number(device.get(k), f"build.device.{k}", optional=True, high=1e9)
                    for k in BUILD_DEVICE_KEYS if k != "name"}
    clean_device["name"] = _text(device.get("name"), "build.device.name", 200, optional=True)
    return {"kernels": [_build_kernel(k) for k in _list(raw.get("kernels") or [], "build.kernels", 8)],
            "device": clean_device}


def counters_job(raw) -> dict:
    """What Nsight Compute printed in a counters job's sandbox (runner/inside/ncuprofile.py), bounded; the
    parent parses it (runner/common/counters.py)."""
    raw = _dict(raw, "counters", ("returncode", "output"))
    return {"returncode": int(_number(raw.get("returncode"), "counters.returncode", low=-64, high=255)),
            "output": _text(raw.get("output"), "counters.output", counters.PROFILE_OUTPUT_LIMIT)}


def _build_kernel(raw) -> dict:
    raw = _dict(raw, "build.kernels[]", BUILD_KERNEL_KEYS)
    clean = {k: _number(raw.get(k), f"build.{k}", optional=True, high=1e9)
             for k in ("registers", "shared_bytes", "local_bytes", "launches")}
    clean["time_share"] = _number(raw.get("time_share"), "build.time_share", optional=True, high=1.0 + 1e-6)
    clean["name"] = _text(raw.get("name"), "build.name", 200)
    for dims in ("grid", "block"):
        value = _list(raw.get(dims) or [], f"build.{dims}", 3)
        clean[dims] = [int(_number(d, f"build.{dims}", high=2**31)) for d in value] or None
    return clean


def _flag_baseline(raw) -> dict | None:
    """Eager timed under the backend flags the kernel set (jobs.py). Only ever lowers the kernel's
    speedups (the faster of the two eager times counts), so a lie here gains nothing."""
    if raw is None:
        return None
    raw = _dict(raw, "flag_baseline", ("flags", "eager_ms"))
    flags = _dict(raw.get("flags"), "flag_baseline.flags", FLAG_KEYS)
    if not flags:
        raise Malformed("flag_baseline names no flag")
    clean = {k: (_text(v, f"flags.{k}", 16) if k == "float32_matmul_precision" else bool(_bool(v, f"flags.{k}")))
             for k, v in flags.items()}
    return {"flags": clean, "eager_ms": _number(raw.get("eager_ms"), "flag_baseline.eager_ms", positive=True,
                                                high=3.6e6)}


def _exchange(raw) -> dict | None:
    """What the candidate's sandbox says it put in its exchange memory: bounded lists here; each
    entry is checked against the memory itself by the trusted judge (exchange.Reader)."""
    if raw is None:
        return None
    raw = _dict(raw, "exchange", ("distributions", "calls", "swaps", "timed_calls"))
    for row in _list(raw.get("distributions"), "exchange.distributions", MAX_DISTRIBUTIONS):
        row = _dict(row, "exchange.distributions[]", ("name", "trials"))
        _text(row.get("name"), "exchange.distributions[].name", 64)
        for trial in _list(row.get("trials"), "exchange.distributions[].trials", MAX_TRIALS):
            _entries(trial, "exchange.distributions[].trials[]")
    for call in _list(raw.get("calls"), "exchange.calls", MAX_CALLS):
        call = _dict(call, "exchange.calls[]", ("call", "set", "outputs"))
        _integer(call.get("call"), "exchange.calls[].call", 0, 10**7)
        _integer(call.get("set"), "exchange.calls[].set", 0, 10**4)
        _entries(call.get("outputs"), "exchange.calls[].outputs")
    for swap in _list(raw.get("swaps", []), "exchange.swaps", MAX_SWAPS):
        swap = _dict(swap, "exchange.swaps[]", ("set", "into", "outputs"))
        _integer(swap.get("set"), "exchange.swaps[].set", 0, 10**4)
        _integer(swap.get("into"), "exchange.swaps[].into", 0, 10**4)
        _entries(swap.get("outputs"), "exchange.swaps[].outputs")
    _integer(raw.get("timed_calls"), "exchange.timed_calls", 0, MAX_SAMPLES)
    return raw


def _entries(raw, where: str) -> None:
    for entry in _list(raw, where, MAX_OUTPUTS):
        _dict(entry, f"{where}[]", ("key", "offset", "nbytes", "shape", "dtype"))


def truths(raw) -> dict:
    """The problem's sandbox's truths (truths.py): the form of what the judge reads; the entries
    themselves are checked against the memory by the trusted judge."""
    raw = _dict(raw, "the truths", ("status", "reason", "log", "atol", "rtol", "expected", "distributions", "sets",
                                    "set_count", "swappable", "phases"))
    status = raw.get("status")
    if status not in ("ok", "invalid", "oom"):
        raise Malformed(f"status {str(status)[:40]!r} is not a truths status")
    clean = {"status": status, "reason": _text(raw.get("reason", ""), "reason", 4000)}
    if status != "ok":
        return clean
    expected = raw.get("expected")
    if not isinstance(expected, list) or not 1 <= len(expected) <= MAX_OUTPUTS:
        raise Malformed("expected is not a short list")
    for form in expected:
        form = _dict(form, "expected[]", ("shape", "dtype"))
        _text(form.get("dtype"), "expected[].dtype", 32)
        if not isinstance(form.get("shape"), list):
            raise Malformed("expected[].shape is not a list")
    for row in _list(raw.get("distributions"), "distributions", MAX_DISTRIBUTIONS):
        row = _dict(row, "distributions[]", ("name", "skipped", "skip_reason", "trials"))
        _text(row.get("name"), "distributions[].name", 64)
        _bool(row.get("skipped"), "distributions[].skipped")
        _text(row.get("skip_reason", ""), "distributions[].skip_reason", 300)
        for trial in _list(row.get("trials"), "distributions[].trials", MAX_TRIALS):
            trial = _dict(trial, "distributions[].trials[]", ("ref_err", "truths"))
            _number(trial.get("ref_err"), "distributions[].trials[].ref_err", optional=True)
            _entries(trial.get("truths"), "distributions[].trials[].truths")
    for kept in _list(raw.get("sets"), "sets", MAX_CALLS):
        kept = _dict(kept, "sets[]", ("index", "ref_err", "truths"))
        _integer(kept.get("index"), "sets[].index", 0, 10**4)
        _number(kept.get("ref_err"), "sets[].ref_err", optional=True)
        _entries(kept.get("truths"), "sets[].truths")
    _integer(raw.get("set_count"), "set_count", 1, 10**4)
    raw["swappable"] = bool(_bool(raw.get("swappable", False), "swappable"))
    phases = _dict(raw.get("phases") or {}, "phases", ("truths_wait_s", "truths_s"))
    raw["phases"] = {k: _number(v, f"phases.{k}", high=86400) for k, v in phases.items()}
    return {**raw, "atol": _number(raw.get("atol"), "atol"), "rtol": _number(raw.get("rtol"), "rtol"), **clean}


def _list(raw, where: str, limit: int) -> list:
    if not isinstance(raw, list) or len(raw) > limit:
        raise Malformed(f"{where} is not a short list")
    return raw


def correctness(raw) -> dict | None:
    """The trusted judge's correctness, checked all the same (its reply crosses a process)."""
    if raw is None:
        return None
    raw = _dict(raw, "correctness", ("atol", "rtol", "passed", "per_distribution"))
    rows = raw.get("per_distribution")
    if not isinstance(rows, list) or len(rows) > MAX_DISTRIBUTIONS:
        raise Malformed("correctness.per_distribution is not a short list")
    clean_rows = []
    for i, row in enumerate(rows):
        where = f"correctness.per_distribution[{i}]"
        row = _dict(row, where, DISTRIBUTION_KEYS)
        clean = {"name": _text(row.get("name"), f"{where}.name", 64),
                 "trials": _integer(row.get("trials"), f"{where}.trials", 0, 10_000),
                 "skipped": _bool(row.get("skipped"), f"{where}.skipped"),
                 "passed": _bool(row.get("passed"), f"{where}.passed", optional=True)}
        for key in ("err", "ref_fp32_err", "max_abs_err"):
            clean[key] = _number(row.get(key), f"{where}.{key}", optional=True, high=math.inf)
        if "skip_reason" in row:
            clean["skip_reason"] = _text(row["skip_reason"], f"{where}.skip_reason", 300)
        if row.get("mismatch") is not None:
            found = _dict(row["mismatch"], f"{where}.mismatch", ("wrong", "total", "nan", "inf", "pattern"))
            clean["mismatch"] = {k: _integer(found.get(k), f"{where}.mismatch.{k}", 0, 1 << 50)
                                 for k in ("wrong", "total", "nan", "inf")}
            clean["mismatch"]["pattern"] = (None if found.get("pattern") is None
                                            else _text(found["pattern"], f"{where}.mismatch.pattern", 80))
        if clean["passed"] and clean["err"] is not None and clean["ref_fp32_err"] is not None \
                and clean["err"] > 1 and clean["err"] > 2 * clean["ref_fp32_err"]:
            raise Malformed(f"{where} says passed with err {clean['err']:.3g}")
        clean_rows.append(clean)
    passed = _bool(raw.get("passed"), "correctness.passed")
    if passed and any(r["passed"] is False for r in clean_rows):
        raise Malformed("correctness says passed but a distribution failed")
    return {"atol": _number(raw.get("atol"), "correctness.atol"), "rtol": _number(raw.get("rtol"), "correctness.rtol"),
            "passed": passed, "per_distribution": clean_rows}


def _timing(raw) -> dict | None:
    if raw is None:
        return None
    raw = _dict(raw, "timing", TIMING_KEYS)
    samples = raw.get("samples_ms")
    if not isinstance(samples, list) or not 1 <= len(samples) <= MAX_SAMPLES:
        raise Malformed("timing.samples_ms is not a list of 1 to 100000 samples")
    clean = [_number(s, "timing.samples_ms[]", positive=True, high=3.6e6) for s in samples]
    summary = timing.summarize(clean)  # recomputed: the sandbox's own summary is not used
    median = raw.get("median_ms")
    if median is not None and not math.isclose(_number(median, "timing.median_ms"), summary["median_ms"],
                                                rel_tol=1e-6, abs_tol=1e-9):
        raise Malformed("timing.median_ms does not match its samples")
    return summary


# --- validation and environment -------------------------------------------------------------

VALIDATION_KEYS = ("status", "reason", "outputs", "family", "flops", "flops_upper_bound", "min_bytes", "baseline",
                   "environment", "log", "phases", "degenerate")
ENVIRONMENT_KEYS = ("device_name", "torch", "cuda", "driver", "python", "runner_version", "threads", "isolation",
                    "device_uuid")


def validation(raw) -> dict:
    raw = _dict(raw, "the validation", VALIDATION_KEYS)
    status = raw.get("status")
    if status not in ("ok", "invalid", "oom"):  # oom: retried by the parent, never stored
        raise Malformed(f"status {str(status)[:40]!r} is not a validation status")
    clean = {"status": status, "reason": _text(raw.get("reason", ""), "reason", 4000),
             "family": _text(raw.get("family"), "family", 64, optional=True),
             "flops": _number(raw.get("flops"), "flops", optional=True, high=1e30),
             # True: the FLOPs may count work the output does not need (runner.common.facts), so a
             # compute-bound speed of light is only an upper bound.
             "flops_upper_bound": _bool(raw.get("flops_upper_bound"), "flops_upper_bound", optional=True),
             "min_bytes": _number(raw.get("min_bytes"), "min_bytes", optional=True, high=1e18),
             # why a trivial output passes the problem's own judging (runner/inside/degenerate.py), or None
             "degenerate": _text(raw.get("degenerate"), "degenerate", 400, optional=True),
             "outputs": None, "baseline": {}}
    if raw.get("outputs") is not None:
        outputs = raw["outputs"]
        if not isinstance(outputs, list) or len(outputs) > MAX_OUTPUTS:
            raise Malformed("outputs is not a short list")
        clean["outputs"] = []
        for i, out in enumerate(outputs):
            out = _dict(out, f"outputs[{i}]", ("shape", "dtype"))
            shape = out.get("shape")
            if not isinstance(shape, list) or len(shape) > 16:
                raise Malformed(f"outputs[{i}].shape is not a list")
            clean["outputs"].append({"shape": [_integer(d, f"outputs[{i}].shape[]") for d in shape],
                                     "dtype": _text(out.get("dtype"), f"outputs[{i}].dtype", 32)})
    if raw.get("baseline") is not None:
        base = _dict(raw["baseline"], "baseline", ("eager_ms", "eager_mean_ms", "compile_ms", "compile_mode", "more"))
        clean["baseline"] = {
            "eager_ms": _number(base.get("eager_ms"), "baseline.eager_ms", optional=True, positive=True, high=3.6e6),
            "eager_mean_ms": _number(base.get("eager_mean_ms"), "baseline.eager_mean_ms", optional=True,
                                     positive=True, high=3.6e6),
            "compile_ms": _number(base.get("compile_ms"), "baseline.compile_ms", optional=True, positive=True,
                                  high=3.6e6),
            "compile_mode": _text(base.get("compile_mode"), "baseline.compile_mode", 300, optional=True)}
        if base.get("more") is not None:
            clean["baseline"]["more"] = _more_baselines(base["more"])
    clean["phases"] = _validation_phases(raw.get("phases") or {})
    if status == "ok" and not clean["baseline"].get("eager_ms"):
        raise Malformed("an ok validation without an eager baseline")
    return clean




def _more_baselines(raw) -> dict:
    raw = _dict(raw, "baseline.more", MORE_BASELINES)
    clean = {}
    for kind, row in raw.items():
        row = _dict(row, f"baseline.more.{kind}", ("ms", "mean_ms", "skipped"))
        clean[kind] = {k: _number(row.get(k), f"baseline.more.{kind}.{k}", optional=True, positive=True, high=3.6e6)
                       for k in ("ms", "mean_ms")}
        clean[kind]["skipped"] = _text(row.get("skipped"), f"baseline.more.{kind}.skipped", 300, optional=True)
    return clean


def _validation_phases(raw) -> dict:
    raw = _dict(raw, "phases", ("device_wait_s", "timing_s", "timing_window"))
    clean = {k: _number(raw[k], f"phases.{k}", high=86400) for k in ("device_wait_s", "timing_s") if k in raw}
    window = raw.get("timing_window")
    if window is not None:
        if not isinstance(window, list) or len(window) != 2:
            raise Malformed("phases.timing_window is not [began, ended]")
        clean["timing_window"] = [_number(t, "phases.timing_window[]", high=1e12) for t in window]
    return clean


def environment(raw) -> dict:
    raw = _dict(raw, "the environment", ENVIRONMENT_KEYS)
    clean = {}
    for key, value in raw.items():
        if key == "threads":
            clean[key] = _integer(value, "environment.threads", 1, 4096)
        else:
            clean[key] = _text(value, f"environment.{key}", 200, optional=True)
    return clean


def health(raw) -> dict:
    raw = _dict(raw, "the health check", ("status", "reason", "do_bench_ms", "runner_ms"))
    if raw.get("status") not in ("ok", "failed", "error"):
        raise Malformed("health status is not ok/failed")
    return {"status": raw["status"], "reason": _text(raw.get("reason", ""), "reason", 4000),
            **{k: _number(raw[k], k, positive=True) for k in ("do_bench_ms", "runner_ms") if k in raw}}
