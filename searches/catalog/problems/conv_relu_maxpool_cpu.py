import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, ReLU, then 3x3 max-pooling with stride 2 (AlexNet's first block)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2)

    def forward(self, x):
        return self.pool(torch.relu(self.conv(x)))


batch_size = 2
height = width = 64


def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return [3, 16, 11, 4, 2]
