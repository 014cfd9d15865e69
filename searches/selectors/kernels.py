"""Reads on kernels: runs, comparison, speed of light, ranking."""

import ast

from django.db.models import Q

from evaluation.models import EvaluationJob
from runner import ceilings
from searches.models import BenchmarkRun, Device, Kernel, Problem, Verdict


def speed_of_light(problem, kernel) -> dict | None:
    """How close a correct kernel's median is to the floor its problem allows on its GPU
    (runner.common.ceilings): None where the GPU model's ceilings or the problem's FLOPs and bytes are
    unknown. Works on Kernel rows and on the tree's plain dicts."""
    get = kernel.get if isinstance(kernel, dict) else (lambda name: getattr(kernel, name))
    if get("status") != Verdict.CORRECT:
        return None
    return ceilings.speed_of_light(device_name=get("device_name"), flops=problem.flops, min_bytes=problem.min_bytes,
                                   precision=get("precision"), median_ms=get("median_ms"),
                                   flops_upper_bound=problem_flops_upper_bound(problem))


def problem_flops_upper_bound(problem) -> bool:
    """Whether the runner said the problem's FLOPs may count work its output does not need (kept
    in the stored validation; problems validated before it was reported read as exact)."""
    return bool((problem.validation or {}).get("flops_upper_bound"))


def kernel_is_ranked(kernel) -> bool:
    """Correct, and either plausible or reproduced by a verified rerun and approved by a person.
    Works on Kernel rows and on the tree's plain dicts."""
    get = kernel.get if isinstance(kernel, dict) else lambda name: getattr(kernel, name)
    if get("status") != Verdict.CORRECT or get("median_ms") is None:
        return False
    return not get("quarantined") or (bool(get("verified")) and get("approved_by_id") is not None)


def trusted_q() -> Q:
    """Kernels the team's memory trusts (its seeds, its ideas' gains): correct, not quarantined, and
    reproduced by a verified rerun wherever a rerun ran. kernel_is_trusted is the same rule on rows."""
    reran = BenchmarkRun.objects.filter(purpose=EvaluationJob.Purpose.RERUN).values("kernel_id")
    return Q(status=Verdict.CORRECT, quarantined=False) & (Q(verified=True) | ~Q(pk__in=reran))


def kernel_is_trusted(kernel, reran: set) -> bool:
    """trusted_q on a Kernel row or a dict of its values; `reran` holds the ids of the kernels a rerun
    judged (rerun_kernel_ids)."""
    get = kernel.get if isinstance(kernel, dict) else lambda name: getattr(kernel, name)
    return (get("status") == Verdict.CORRECT and not get("quarantined")
            and (bool(get("verified")) or get("id") not in reran))


def rerun_kernel_ids(kernel_ids) -> set:
    """Which of `kernel_ids` a rerun judged."""
    return set(BenchmarkRun.objects.filter(kernel_id__in=kernel_ids, purpose=EvaluationJob.Purpose.RERUN)
               .values_list("kernel_id", flat=True))


def kernel_runs(*, kernel: Kernel):
    return list(BenchmarkRun.objects.filter(kernel=kernel).order_by("-created_at"))


def kernel_primary_run(runs: list[BenchmarkRun]) -> BenchmarkRun | None:
    """The run the kernel's figures come from: its newest search/manual verdict, else any."""
    for run in runs:
        if run.purpose != EvaluationJob.Purpose.RERUN:
            return run
    return runs[0] if runs else None


def kernel_profile(runs: list[BenchmarkRun]) -> tuple[BenchmarkRun, dict] | tuple[None, None]:
    """The newest run's profile (runner/common/roofline.py), any purpose: a profile asked for on the page
    arrives with a verified rerun, and runs from before profiles existed have none."""
    for run in runs:
        profile = (run.result or {}).get("profile")
        if isinstance(profile, dict):
            return run, profile
    return None, None


def kernel_pending_rerun(*, kernel: Kernel) -> bool:
    return EvaluationJob.objects.filter(
        kernel=kernel, purpose=EvaluationJob.Purpose.RERUN,
        status__in=EvaluationJob.UNFINISHED,
    ).exists()


def kernel_by_code(code) -> Kernel:
    return Kernel.objects.select_related("problem", "search", "idea", "parent", "call", "author",
                                         "approved_by").get(code=code)


def kernel_signature(kernel: Kernel):
    """What a kernel computes, for deciding whether two kernels can be compared: its problem's
    outputs (shapes and dtypes) as the runner reported them."""
    outputs = (kernel.problem.validation or {}).get("outputs")
    return tuple((tuple(o.get("shape") or ()), o.get("dtype")) for o in outputs) if outputs else None


def kernel_compare_problem(a: Kernel, b: Kernel) -> str:
    """Empty when the two kernels can be compared, else the reason why not."""
    if a.problem_id == b.problem_id:
        return ""
    sig_a, sig_b = kernel_signature(a), kernel_signature(b)
    if sig_a is None or sig_b is None:
        return ("These kernels solve different problems and at least one problem has not been validated, so "
                "their outputs cannot be checked to match. Compare kernels of the same problem, or validate both.")
    if sig_a != sig_b:
        return "These kernels solve problems with different outputs (shapes or dtypes), so they cannot be compared."
    return ""


def provenance(runs) -> list[dict]:
    """Hardware and software behind some runs: one entry per distinct environment."""
    seen, out = set(), []
    for run in runs:
        if run is None:
            continue
        env = run.environment or {}
        key = tuple(str(env.get(k, "")) for k in ("device_name", "driver", "torch", "cuda", "runner_version"))
        if key in seen:
            continue
        seen.add(key)
        out.append({"device_name": env.get("device_name") or run.device_name, "driver": env.get("driver"),
                    "torch": env.get("torch"), "cuda": env.get("cuda"), "python": env.get("python"),
                    "runner_version": env.get("runner_version"), "date": run.created_at, "seed": run.seed})
    return out


_TEMPLATE_CPU = '''"""A kernel for {name}: ModelNew takes Model's constructor arguments and returns what Model returns,
computed by the C function below (docs: /docs/kernel-format/)."""
import ctypes
import os
import subprocess
import tempfile

import torch
import torch.nn as nn

_SOURCE = r"""
#include <stdint.h>
void kernel(const float *x, float *out, int64_t n) {{
    for (int64_t i = 0; i < n; i++) {{
        out[i] = x[i];  /* TODO: what Model.forward computes */
    }}
}}
"""


def _build(source):
    folder = tempfile.mkdtemp(prefix="kernel-")  # the sandbox's own temp folder
    path, library = os.path.join(folder, "kernel.c"), os.path.join(folder, "kernel.so")
    with open(path, "w") as handle:
        handle.write(source)
    subprocess.run(["cc", "-O3", "-march=native", "-shared", "-fPIC", path, "-o", library, "-lm"],
                   capture_output=True, text=True, check=True)
    return ctypes.CDLL(library)


_lib = _build(_SOURCE)


class ModelNew(nn.Module):
    def __init__({init}):
        super().__init__()

    def forward({forward}):
        x = {first}.contiguous()
        out = torch.empty_like(x)  # TODO: Model's output shape and dtype
        _lib.kernel(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(out.data_ptr()), ctypes.c_int64(x.numel()))
        return out
'''

_TEMPLATE_CUDA = '''"""A kernel for {name}: ModelNew takes Model's constructor arguments and returns what Model returns,
computed by the CUDA kernel below (docs: /docs/kernel-format/)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>

__global__ void kernel(const float *x, float *out, int64_t n) {{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];  /* TODO: what Model.forward computes */
}}

torch::Tensor run(torch::Tensor x) {{
    auto out = torch::empty_like(x);  // TODO: Model's output shape and dtype
    int64_t n = x.numel();
    kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}}
"""

_ext = load_inline(name="kernel_ext", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=_CUDA,
                   functions=["run"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__({init}):
        super().__init__()

    def forward({forward}):
        return _ext.run({first}.contiguous())
'''


def kernel_template(problem: Problem) -> str:
    """A ModelNew skeleton for the problem, with its Model's constructor and forward arguments and a
    kernel of its own to fill in (the kernel form's starting point)."""
    init, forward, first = "self", "self, x", "x"
    try:
        module = ast.parse(problem.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # a stored problem parses; be safe anyway
        module = ast.Module(body=[], type_ignores=[])
    model = next((node for node in module.body if isinstance(node, ast.ClassDef) and node.name == "Model"), None)
    for item in model.body if model else ():
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            init = ast.unparse(item.args)
        elif isinstance(item, ast.FunctionDef) and item.name == "forward":
            forward = ast.unparse(item.args)
            positional = item.args.posonlyargs + item.args.args
            first = positional[1].arg if len(positional) > 1 else (item.args.vararg.arg + "[0]" if item.args.vararg
                                                                   else first)
    template = _TEMPLATE_CUDA if problem.device == Device.CUDA else _TEMPLATE_CPU
    return template.format(name=problem.name.replace('"', "'"), init=init, forward=forward, first=first)
