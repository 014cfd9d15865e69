"""The runner's dispatch modes without torch._dynamo's import (a second of CPU in every sandbox).

PyTorch wraps a mode's `__torch_dispatch__` in `torch._disable_dynamo`, which imports torch._dynamo
on the first dispatched op, so that Dynamo never compiles the mode's own frames. Dynamo can only be
compiling once it is imported, so the modes here call their method directly until it is, and
through `torch._dynamo.disable` from then on (a candidate that uses torch.compile imports it)."""

from __future__ import annotations

import functools
import sys

from torch.utils._python_dispatch import TorchDispatchMode


class DispatchMode(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # PyTorch's own wrapping, which imports Dynamo: replaced below
        return False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__torch_dispatch__")
        if own is not None and not isinstance(own, classmethod):
            cls.__torch_dispatch__ = _undynamo_once_loaded(own)


def _undynamo_once_loaded(method):
    disabled = None

    @functools.wraps(method)
    def dispatch(*args, **kwargs):
        nonlocal disabled
        dynamo = sys.modules.get("torch._dynamo")
        disable = getattr(dynamo, "disable", None)  # None also while it is being imported: nothing compiles yet
        if disable is None:
            return method(*args, **kwargs)
        if disabled is None:
            disabled = disable(method, recursive=True)
        return disabled(*args, **kwargs)

    return dispatch
