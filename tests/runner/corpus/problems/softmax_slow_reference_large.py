import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over each row after a wasteful product with the identity matrix (GPU-sized: 8.6 GFLOP
    of matmul around a 4 MB softmax). A plain softmax kernel is correct and far more than 10x faster,
    which the runner must quarantine as implausible rather than rank."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        identity = torch.eye(x.shape[1], dtype=x.dtype, device=x.device)
        return torch.softmax(x @ identity, dim=1)


def get_inputs():
    return [torch.randn(256, 4096)]


def get_init_inputs():
    return []
