import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LayerNorm over the last dimension, without affine parameters."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), eps=self.eps)


def get_inputs():
    return [torch.randn(64, 512)]


def get_init_inputs():
    return [1e-5]
