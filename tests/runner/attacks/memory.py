# Memory past the limit: 1.5 GiB, every page touched.
import torch

hog = torch.ones(384 * 1024 * 1024)
