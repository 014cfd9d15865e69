import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over each row, written wastefully: the rows first pass through a product with
    the identity matrix. A plain softmax kernel is correct here and far more than 10x faster,
    which the runner must quarantine as implausible rather than rank."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        identity = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
        return torch.softmax(x @ identity, dim=1)


def get_inputs():
    return [torch.randn(16, 2048)]


def get_init_inputs():
    return []
