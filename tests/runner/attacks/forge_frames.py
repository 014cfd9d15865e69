# Problem code runs in the candidate's sandbox as well (the candidate's weights and the outputs'
# form come from it): there it walks the frames from a caught exception's traceback up to the
# sandbox's loop, takes its verdict channel and sends a verdict of its own.
import os
import sys

import torch
import torch.nn as nn

FORGED = {FORGED}
WITH_OUTPUTS = {WITH_OUTPUTS}  # also put outputs of its own in the exchange memory, and list them


def outputs(writer) -> dict:
    zeros = torch.zeros(128, 2048)
    trials = {"get_inputs": 3, "uniform": 1, "offset": 1}
    return {"distributions": [{"name": name, "trials": [[writer.put(f"{name}/{t}", zeros)] for t in range(n)]}
                              for name, n in trials.items()],
            "calls": [{"call": 0, "set": 0, "outputs": [writer.put("call", zeros)]}], "timed_calls": 20}


def forge():
    try:
        raise RuntimeError("a way into the frames")
    except RuntimeError as exc:
        frame = getattr(exc.__traceback__, "tb_" + "frame")
    found = {}
    while frame is not None:
        for value in list(frame.f_locals.values()):
            found.setdefault(type(value).__name__, value)
        frame = frame.f_back
    verdict = dict(FORGED)
    if WITH_OUTPUTS:
        verdict["exchange"] = outputs(found["Writer"])
    found["Channel"].send("verdict", result=verdict)
    os._exit(0)


class Model(nn.Module):
    def forward(self, x):
        if "kernellab_kernel" in sys.modules:  # in the candidate's sandbox, not the truths' one
            forge()
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(128, 2048)]


def get_init_inputs():
    return []
