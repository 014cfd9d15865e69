"""The runner's dispatch modes (the op recorders) without torch._dynamo's import (a second of CPU in every sandbox).

PyTorch wraps a mode's `__torch_dispatch__` in `torch._disable_dynamo`, whose wrapper imports
torch._dynamo on its first call so that Dynamo never compiles the mode's own frames. The modes here
keep that wrapper (it lives in a file Dynamo skips, so even a `fullgraph=True` compile never traces
it) but hand it the method itself as its cached "disabled" function, so it calls the method directly;
once torch._dynamo has finished importing (a candidate's torch.compile), the cache is dropped and
the wrapper disables Dynamo as PyTorch means it to. Dynamo compiles nothing before its import ends."""

from __future__ import annotations

import importlib.machinery
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_CACHE = "__dynamo_disable"  # the attribute torch._disable_dynamo's wrapper caches its disabled function in
_waiting: list = []  # methods whose cache holds themselves until Dynamo is imported


class DispatchMode(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # PyTorch's own wrapping: done below, with the cache filled
        return False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__torch_dispatch__")
        if own is not None and not isinstance(own, classmethod):
            if "torch._dynamo" not in sys.modules:
                setattr(own, _CACHE, own)
                _waiting.append(own)
                _AfterDynamoImport.install()
            cls.__torch_dispatch__ = torch._disable_dynamo(own, recursive=True)


class _AfterDynamoImport:
    """A finder on sys.meta_path that asks to be told when torch._dynamo's module has run."""

    @classmethod
    def install(cls) -> None:
        if not any(isinstance(finder, cls) for finder in sys.meta_path):
            sys.meta_path.insert(0, cls())

    def find_spec(self, name, path=None, target=None):
        if name != "torch._dynamo":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            _release()  # imported some other way: let the wrapper import it when it must
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _release()

        spec.loader.exec_module = exec_module
        return spec


def _release() -> None:
    while _waiting:
        delattr(_waiting.pop(), _CACHE)


class OpRecorder(DispatchMode):
    """Records the aten ops dispatched while active (also those an extension calls). Dynamo compiles
    nothing under it: a compiled function runs eagerly, its ops recorded."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


class LibraryOpRecorder(OpRecorder):
    """With library calls allowed: off while torch.compile compiles, on while what it compiled runs,
    so a candidate's own torch.compile works (`fullgraph=True` too). Its fused kernels are no aten ops
    and no kernel of the candidate's own; without library calls that would hide PyTorch's work."""

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True
