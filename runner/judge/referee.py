"""The trusted judge: a long-lived process of runner code only (no problem, no candidate code
ever runs here) that compares a candidate's outputs with the truths. Started by the parent
(refereeing.py) as a plain child, outside the sandboxes, on the CPU: it never initialises
CUDA, so it neither costs a CUDA start nor disturbs the device the candidates are timed on.

Each request on its socket (SOCK_SEQPACKET) carries two sealed exchange memfds (exchange.py)
by SCM_RIGHTS, the truths' sandbox and the candidate's, and both sandboxes' descriptions of
them; every description is checked against the memory before a byte of it is read.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys

CHUNK = 1 << 18  # elements compared at a time: the temporaries stay in cache (fastest measured here)
MESSAGE = 1 << 20


def main() -> None:
    from ..common.lifeline import die_with_parent

    die_with_parent()
    sock = socket.socket(fileno=int(sys.argv[1]))
    import torch

    torch.set_num_threads(max(1, int(os.environ.get("KERNELLAB_REFEREE_THREADS", "2"))))
    sock.send(b'{"ready": true}')
    while True:
        data, fds, _, _ = socket.recv_fds(sock, MESSAGE, 2)
        if not data:
            return
        try:
            reply = judge(json.loads(data), fds)
        except Exception as exc:  # anything unreadable is the sandboxes' fault, never a crash here
            reply = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        finally:
            for fd in fds:
                os.close(fd)
        sock.send(json.dumps(reply).encode())


def judge(request: dict, fds: list[int]) -> dict:
    from ..common.exchange import Reader, Unusable

    if len(fds) != 2:
        return {"error": "two exchange memories were expected"}
    truths, outputs = Reader(fds[0]), Reader(fds[1])
    try:
        return _judge(request["truths"], request["outputs"], truths, outputs, untimed=request.get("untimed") is True)
    except Unusable as exc:
        return {"unusable": str(exc)}
    finally:
        truths.close()
        outputs.close()


def _judge(made: dict, shipped: dict, truths, outputs, untimed: bool = False) -> dict:
    """`untimed` (the parent's word, for a draft's check): no timed or swapped call is owed."""
    from ..common.exchange import Unusable
    from ..common.verify import passes

    atol, rtol, expected = float(made["atol"]), float(made["rtol"]), made["expected"]
    by_name = {row.get("name"): row for row in shipped.get("distributions") or [] if isinstance(row, dict)}
    per_distribution = []
    for dist in made["distributions"]:
        row = {"name": dist["name"], "trials": 0, "err": 0.0, "ref_fp32_err": 0.0, "max_abs_err": 0.0,
               "skipped": bool(dist["skipped"]), "passed": True}
        if dist.get("skip_reason"):
            row["skip_reason"] = dist["skip_reason"]
        got = (by_name.get(dist["name"]) or {}).get("trials") or []
        for t, trial in enumerate(dist["trials"]):
            if t >= len(got):
                raise Unusable(f"the candidate's sandbox sent no outputs for {dist['name']} trial {t + 1}")
            err, abs_err = _compare(got[t], trial["truths"], expected, outputs, truths, atol, rtol)
            ref_err = math.inf if trial["ref_err"] is None else float(trial["ref_err"])
            row["trials"] += 1
            row["err"], row["max_abs_err"] = max(row["err"], err), max(row["max_abs_err"], abs_err)
            row["ref_fp32_err"] = max(row["ref_fp32_err"], ref_err)
            if row["passed"] and not passes(err, ref_err):  # the first failing trial's summary, for its author
                row["mismatch"] = _mismatch(got[t], trial["truths"], expected, outputs, truths, atol, rtol)
            row["passed"] = row["passed"] and passes(err, ref_err)
        if row["skipped"] and row["trials"] == 0:
            row["passed"] = None
        for key in ("err", "ref_fp32_err", "max_abs_err"):
            row[key] = None if row[key] == math.inf else row[key]
        per_distribution.append(row)
    passed = all(r["skipped"] or r["passed"] for r in per_distribution)
    correctness = {"atol": atol, "rtol": rtol, "passed": passed, "per_distribution": per_distribution}
    sets = {s["index"]: s for s in made["sets"]}
    failure, checked = None, 0
    for call in shipped.get("calls") or []:
        index, kept = call.get("call"), sets.get(call.get("set"))
        if not isinstance(index, int) or call.get("set") != index % int(made["set_count"]) or kept is None:
            raise Unusable("a sampled timed call names inputs it was not given")
        err, _ = _compare(call.get("outputs"), kept["truths"], expected, outputs, truths, atol, rtol)
        checked += 1
        ref_err = math.inf if kept["ref_err"] is None else float(kept["ref_err"])
        if failure is None and not passes(err, ref_err):
            failure = [index, None if err == math.inf else err]
    if passed and not checked and not untimed:
        raise Unusable("the candidate's sandbox sent no output of a timed call")
    swapped, swaps = None, 0
    for swap in shipped.get("swaps") or []:
        kept, into = sets.get(swap.get("set")), swap.get("into")
        if kept is None or not isinstance(into, int) or into == swap.get("set") \
                or not 0 <= into < int(made["set_count"]):
            raise Unusable("a swapped call names inputs it was not given")
        err, _ = _compare(swap.get("outputs"), kept["truths"], expected, outputs, truths, atol, rtol)
        swaps += 1
        ref_err = math.inf if kept["ref_err"] is None else float(kept["ref_err"])
        if swapped is None and not passes(err, ref_err):
            swapped = [swap["set"], into, None if err == math.inf else err]
    if passed and not swaps and made.get("swappable") and not untimed:
        raise Unusable("the candidate's sandbox sent no swapped call")
    return {"correctness": correctness, "replay": {"failure": failure, "checked": checked},
            "swap": {"failure": swapped, "checked": swaps}}


def _mismatch(got, truth_entries, expected, outputs, truths, atol, rtol) -> dict | None:
    """verify.mismatch of the first output that is wrong; positions only for an output shipped whole."""
    from ..common.sampling import sampled, shipped_shape
    from ..common.verify import mismatch

    for k, form in enumerate(expected):
        shape = shipped_shape(form["shape"])
        out = outputs.tensor(got[k], shape=shape, dtype=form["dtype"])
        found = mismatch(out, truths.tensor(truth_entries[k], shape=shape), atol, rtol, whole=not sampled(form["shape"]))
        if found["wrong"]:
            return found
    return None


def _compare(got, truth_entries, expected, outputs, truths, atol, rtol) -> tuple[float, float]:
    """(err, max_abs_err) over all outputs, as verify.compare, a chunk at a time."""
    import torch

    from ..common.exchange import Unusable
    from ..common.sampling import shipped_shape
    from ..common.verify import err_ratio

    if not isinstance(got, list) or len(got) != len(expected):
        raise Unusable(f"the candidate's sandbox sent {len(got) if isinstance(got, list) else 'no'} outputs "
                       f"where the reference returns {len(expected)}")
    worst, worst_abs = 0.0, 0.0
    for k, form in enumerate(expected):
        shape = shipped_shape(form["shape"])  # a large output crosses as its sample, as its truth does
        out = outputs.tensor(got[k], shape=shape, dtype=form["dtype"]).reshape(-1)
        truth = truths.tensor(truth_entries[k], shape=shape).reshape(-1)
        exact = out.dtype == torch.float64 or truth.dtype == torch.float64 or not out.is_floating_point()
        for start in range(0, out.numel(), CHUNK):
            x, t = out[start:start + CHUNK], truth[start:start + CHUNK]
            err, abs_err = err_ratio(x, t, atol, rtol) if exact else _err_float32(x, t, atol, rtol)
            worst, worst_abs = max(worst, err), max(worst_abs, abs_err)
            if worst == math.inf:
                return worst, worst_abs
        del out, truth
    return worst, worst_abs


def _err_float32(x, t, atol: float, rtol: float) -> tuple[float, float]:
    """verify.err_ratio in float32, for outputs of float32 and narrower against float32 truths: a
    few passes over the chunk instead of float64 copies (3.3x faster, measured on 4M elements). The float32 difference
    moves err by at most ~6e-8 relative to |truth| against tolerances of 1e-4 and looser. A
    non-finite truth (its sum is not finite) goes the exact way, which matches it element by element."""
    from ..common.verify import err_ratio

    t = t.float()
    if not math.isfinite(float(t.sum())):
        return err_ratio(x, t, atol, rtol)
    diff = x.float().sub(t).abs_()  # NaN where x is NaN, inf where x is inf
    max_abs = float(diff.max())
    err = float(diff.div_(t.abs().mul_(rtol).add_(atol)).max())
    if math.isnan(err) or math.isnan(max_abs):
        return math.inf, math.inf
    return err, max_abs


if __name__ == "__main__":
    main()
