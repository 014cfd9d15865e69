# Problem code runs in the candidate's sandbox too (the outputs' form and the weights come from it):
# during an evaluation it finds the verdict channel through gc and sends a verdict of its own.
import gc
import os
import sys

import torch
import torch.nn as nn

FORGED = {FORGED}


class Model(nn.Module):
    def forward(self, x):
        if "kernellab_kernel" in sys.modules:  # an evaluation, not the validation
            for obj in gc.get_objects():
                if type(obj).__name__ == "Channel":
                    obj.send("verdict", result=FORGED)
                    os._exit(0)
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(128, 2048)]


def get_init_inputs():
    return []
