"""The pool's trusted judges (runner/host/refereeing.py): real judge processes comparing sealed
exchange memories; with several, one busy judge does not hold up another evaluation."""

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from runner.common import exchange
from runner.host.refereeing import Referees

TRUTH = torch.linspace(-1, 1, 64)


def request(output: torch.Tensor, swapped: torch.Tensor | None = None, swappable: bool = False
            ) -> tuple[dict, int, int]:
    truths_fd, outputs_fd = exchange.create(), exchange.create()
    truth = exchange.Writer(truths_fd).put("t", TRUTH)
    writer = exchange.Writer(outputs_fd)
    trial, call = writer.put("trial", output), writer.put("call", output)
    swaps = [] if swapped is None else [{"set": 0, "into": 1, "outputs": [writer.put("swap", swapped)]}]
    for fd in (truths_fd, outputs_fd):
        exchange.seal(fd)
    made = {"atol": 1e-5, "rtol": 1e-5, "expected": [{"shape": [64], "dtype": "float32"}], "set_count": 2,
            "distributions": [{"name": "get_inputs", "skipped": False, "trials": [{"ref_err": 0.0, "truths": [truth]}]}],
            "sets": [{"index": 0, "ref_err": 0.0, "truths": [truth]}], "swappable": swappable}
    shipped = {"distributions": [{"name": "get_inputs", "trials": [[trial]]}],
               "calls": [{"call": 0, "set": 0, "outputs": [call]}], "swaps": swaps}
    return {"truths": made, "outputs": shipped}, truths_fd, outputs_fd


def judged(referees: Referees, output: torch.Tensor, **swap) -> dict:
    body, truths_fd, outputs_fd = request(output, **swap)
    try:
        return referees.judge(body, truths_fd, outputs_fd, timeout=120)
    finally:
        os.close(truths_fd)
        os.close(outputs_fd)


@pytest.fixture(scope="module")
def referees():
    judges = Referees(count=2, threads=2)
    judges.start()
    yield judges
    judges.close()


def test_the_threads_are_shared_out_between_the_judges(referees):
    assert [r.threads for r in referees.all] == [1, 1]


@pytest.mark.slow
def test_each_judge_compares_and_one_busy_judge_does_not_hold_up_the_other(referees):
    busy = referees._free.get()  # one judge taken, as by an evaluation still being compared
    try:
        reply = judged(referees, TRUTH.clone())
        assert reply["correctness"]["passed"] and reply["replay"] == {"failure": None, "checked": 1}
    finally:
        referees._free.put(busy)
    with ThreadPoolExecutor(2) as side:  # both at once: each gets its own judge
        right, wrong = side.map(lambda out: judged(referees, out), [TRUTH.clone(), TRUTH + 0.5])
    assert right["correctness"]["passed"]
    assert not wrong["correctness"]["passed"] and wrong["replay"]["failure"][0] == 0


@pytest.mark.slow
def test_a_swapped_call_is_judged_against_the_data_written_and_required_where_the_sets_allow_one(referees):
    """runner/inside/replay.py's IdentitySwap: set 0's data in set 1's storages must give set 0's truth."""
    assert judged(referees, TRUTH.clone(), swapped=TRUTH.clone(), swappable=True)["swap"] == {
        "failure": None, "checked": 1}
    stale = judged(referees, TRUTH.clone(), swapped=TRUTH + 0.5, swappable=True)["swap"]
    assert stale["failure"][:2] == [0, 1] and stale["failure"][2] > 1
    assert "sent no swapped call" in judged(referees, TRUTH.clone(), swappable=True)["unusable"]
    assert judged(referees, TRUTH.clone())["swap"] == {"failure": None, "checked": 0}  # no two sets alike: none owed
