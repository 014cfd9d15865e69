"""Large outputs cross to the trusted judge as samples: the same SAMPLE positions of the
candidate's output and of the truth, drawn from a seed the parent reveals only once the output
exists (the candidate's sandbox asks for it on the verdict channel after each call; the truths'
sandbox gets the parent's secret with its job). Moving every byte through host memory cost about
12 GiB per candidate on a 1 GiB output (docs/BENCHMARKS.md, "Trusted judge"); a sample of 4M
positions misses no wrong output that differs in more than a few millionths of its elements, and
the candidate's own sandbox still compares every element on the device, a check that can only
refuse (runner/inside/jobs.py).

The seed and the form are plain Python (the parent and the judge use them); `take` imports torch.
"""

from __future__ import annotations

import hashlib
import hmac
import math

SAMPLE = 1 << 22  # positions per sampled output: 16 MiB of float32
KEY_CHARS = 200


def sampled(shape) -> bool:
    return math.prod(int(n) for n in shape) > SAMPLE


def shipped_shape(shape) -> list[int]:
    """The shape of what crosses for an output of `shape`: the whole tensor, or its sample."""
    return [SAMPLE] if sampled(shape) else [int(n) for n in shape]


def seed_for(secret: bytes, key: str) -> int:
    """The sample's seed for one output (`key` names it, e.g. trial/uniform/0/0): unguessable
    without the parent's secret, the same in both sandboxes."""
    digest = hmac.new(secret, str(key)[:KEY_CHARS].encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def take(tensor, seed: int):
    """`tensor`'s sample for `seed`: SAMPLE positions of its flattened elements, on its device."""
    import torch

    flat = tensor.detach().reshape(-1)
    generator = torch.Generator(device=flat.device).manual_seed(int(seed))
    positions = torch.randint(flat.numel(), (SAMPLE,), generator=generator, device=flat.device)
    return flat[positions]
