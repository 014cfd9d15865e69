# Problem code in the candidate's sandbox replaces the runner's timers (not the guarded clocks,
# the functions that call them) so the samples it reports are twenty times lower than measured.
import sys

import torch
import torch.nn as nn


def forge():
    timing = sys.modules["runner.common.timing"]
    for name in ("time_cpu", "time_cuda"):
        real = getattr(timing, name)

        def faster(*args, _real=real, **kwargs):
            measured = _real(*args, **kwargs)
            return {**measured, "samples_ms": [s / 20 for s in measured["samples_ms"]]}

        setattr(timing, name, faster)


class Model(nn.Module):
    def forward(self, x):
        if "kernellab_kernel" in sys.modules:  # in the candidate's sandbox, not the truths' one
            forge()
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
