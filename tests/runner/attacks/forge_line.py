# Problem code runs in the candidate's sandbox too: during an evaluation it finds the verdict
# channel through gc and writes one raw line past what any message of the runner's may be
# (nested too deep for json's decoder, or too long), then carries on as an honest problem.
import gc
import os
import sys

import torch
import torch.nn as nn

LINE = {LINE}


class Model(nn.Module):
    def forward(self, x):
        if "kernellab_kernel" in sys.modules:  # an evaluation, not the validation
            for obj in gc.get_objects():
                if type(obj).__name__ == "Channel":
                    data = LINE
                    while data:
                        data = data[os.write(obj._verdict_fd, data):]
                    break
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(128, 2048)]


def get_init_inputs():
    return []
