import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension, keeping it (size 1) in the output."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 8
dim1 = 512
dim2 = 256


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
