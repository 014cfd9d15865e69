import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2D convolution with a square kernel, stride and padding (AlexNet's first layer)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.conv(x)


batch_size = 100
height = width = 224


def get_inputs():
    return [torch.randn(batch_size, 3, height, width)]


def get_init_inputs():
    return [3, 96, 11, 4, 2]
