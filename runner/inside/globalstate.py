"""torch's global settings, as the candidate's sandbox sees them (plain torch; imported there).

A kernel may change the backend flags the field sets (checks.BACKEND_FLAGS): each is read here,
and eager is timed again under the kernel's values (runner/inside/jobs.py). Every other global setting
the reference and the baselines are measured under is watched instead of read off the source: a
kernel may assign one (`torch.backends.cudnn.deterministic = False`, as published kernels do), and
is refused only if the value it leaves differs from the runner's.

What a kernel assigns under torch.backends is judged here too, not off its source: every namespace there
(the modules, their setting objects, their classes) is read before the build and after every recorded call,
and a kernel is refused if one of them is left holding something other than plain data where it held it,
or anything at all in place of a function, module, class or descriptor (a saved value restored is the
same object): such an object could stand in for one the runner or PyTorch calls.
"""

from __future__ import annotations

import sys
import types

import torch

from ..common import verify


def backend_flags() -> dict:
    """The global backend settings a kernel may change (checks.BACKEND_FLAGS)."""
    return {"cudnn.benchmark": bool(torch.backends.cudnn.benchmark),
            "cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


def _read(getter):
    try:
        return getter()
    except Exception:  # a setting this build of torch lacks
        return None


WATCHED = {
    "torch.backends.cudnn.enabled": lambda: bool(torch.backends.cudnn.enabled),
    "torch.backends.cudnn.deterministic": lambda: bool(torch.backends.cudnn.deterministic),
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
        lambda: bool(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
        lambda: bool(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    "torch.backends.cuda.flash_sdp_enabled()": lambda: torch.backends.cuda.flash_sdp_enabled(),
    "torch.backends.cuda.mem_efficient_sdp_enabled()": lambda: torch.backends.cuda.mem_efficient_sdp_enabled(),
    "torch.backends.cuda.math_sdp_enabled()": lambda: torch.backends.cuda.math_sdp_enabled(),
    "torch.are_deterministic_algorithms_enabled()": lambda: torch.are_deterministic_algorithms_enabled(),
    "torch.backends.mkldnn.enabled": lambda: bool(torch.backends.mkldnn.enabled),
    "torch.get_num_threads()": torch.get_num_threads,
}


PLAIN = (bool, int, float, complex, str, bytes, type(None))
HELD = "torch.backends objects"  # watched()'s key for what torch.backends holds


def _namespaces() -> list[tuple[str, object]]:
    """torch.backends and every module, setting object and class under it, by name, read off their dicts
    (no attribute is called: a replaced one could run)."""
    found, todo, seen = [], [("torch.backends", vars(torch)["backends"])], set()
    while todo:
        name, space = todo.pop()
        if id(space) in seen or getattr(space, "__dict__", None) is None:
            continue
        seen.add(id(space))
        found.append((name, space))
        if not isinstance(space, type):
            todo += [(f"type({name}).{kind.__name__}", kind) for kind in type(space).__mro__ if _ours(kind)]
        for key, value in list(vars(space).items()):
            if isinstance(value, types.ModuleType):
                if getattr(value, "__name__", "").startswith("torch.backends"):
                    todo.append((f"{name}.{key}", value))
            elif _ours(value) or not isinstance(value, type) and not callable(value) and _ours(type(value)):
                todo.append((f"{name}.{key}", value))
    return found


def _ours(kind) -> bool:
    return isinstance(kind, type) and str(getattr(kind, "__module__", "")).startswith("torch.backends")


def held() -> dict:
    """What each torch.backends namespace holds now: its name -> (the namespace, its dict's items)."""
    return {name: (space, dict(vars(space))) for name, space in _namespaces()}


def replaced(before: dict) -> str | None:
    """Why the kernel is refused when it left an object under torch.backends in place of torch's."""
    if vars(torch).get("backends") is not before["torch.backends"][0]:
        return "the kernel replaced torch.backends; leave torch's modules alone"
    by_id = {id(space): was for space, was in before.values()}
    for name, (space, was) in before.items():
        for key, value in list(vars(space).items()):
            if key in was:
                old = was[key]
            else:  # a new name may hold what it read before (a module's own function, saved and assigned back)
                old = value if value is _read_before(by_id, space, was, key) or _imported(key, value) else None
            if value is old or key == "__warningregistry__" \
                    or type(value) in PLAIN and (key not in was or type(old) in PLAIN):
                continue
            where = f" where torch had {_a(old)}" if key in was else ""
            return (f"the kernel left {name}.{key} holding {_a(value)}{where}: under torch.backends only "
                    "plain values (numbers, strings, None) may be assigned, or a saved one restored, since an object "
                    "could stand in for a function the runner or PyTorch calls")
        for key in was.keys() - vars(space).keys():
            return f"the kernel deleted {name}.{key}; leave torch.backends' functions and modules alone"
    return None


def _read_before(by_id: dict, space, was: dict, key: str):
    """What `space.key` read before the kernel ran, where a name new to its dict was found then: a wrapping
    module's own module (torch.backends.cudnn's `m`) or its class."""
    for owner in (was.get("m"), *type(space).__mro__):
        if key in by_id.get(id(owner), ()):
            return by_id[id(owner)][key]
    return None


def _a(value) -> str:
    kind = type(value).__name__
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _imported(key: str, value) -> bool:
    """A submodule imported since (`import torch.backends.opt_einsum`): torch's own, not the kernel's."""
    module = getattr(value, "__name__", None) if isinstance(value, types.ModuleType) else None
    return module is not None and sys.modules.get(module) is value and module.endswith("." + key)


def settings() -> dict:
    return {name: _read(getter) for name, getter in WATCHED.items()}


def watched() -> dict:
    return {**settings(), HELD: held()}


def changed(before: dict) -> str | None:
    """Why the kernel is refused when it left a watched setting other than the runner's, or an object under
    torch.backends in place of torch's (read first: the settings are read through torch.backends), else None."""
    swapped = replaced(before[HELD])
    if swapped:
        return swapped
    now = settings()
    moved = [f"{name} from {before[name]} to {now[name]}" for name in WATCHED if now[name] != before[name]]
    if not moved:
        return None
    return (f"the kernel changed {', '.join(moved)}: global state the reference and the baselines are measured "
            "under; only cudnn.benchmark, cudnn.allow_tf32, cuda.matmul.allow_tf32 and the float32 matmul "
            "precision may change")


def vetted(job: dict) -> str:
    """The kernel's source, once no torch._C name the static checks left to the run (checks.undeclared_internal:
    PyTorch's stubs never mention it) exists in this PyTorch: read before the kernel's module runs."""
    present = [name for name in job.get("internals") or () if hasattr(torch._C, name)]
    if present:
        raise verify.Rejected(f"uses torch._C.{present[0]}, PyTorch internals; use the public API only")
    return job["kernel_source"]
