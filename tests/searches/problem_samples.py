"""KernelBench problem sources used by the problem tests (tests/searches and tests/browser)."""

SOFTMAX = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

SYNTAX_ERROR = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x)
        return x * 2


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
'''

MISSING_GET_INPUTS = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_init_inputs():
    return []
'''

RAISES_AT_RUN_TIME = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        raise RuntimeError("reference exploded on purpose")


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
'''


def two_megabytes() -> str:
    """A syntactically fine problem padded with a 2 MB comment block."""
    padding = ("# " + "x" * 98 + "\n") * (2 * 1024 * 1024 // 101 + 1)
    return SOFTMAX + padding
