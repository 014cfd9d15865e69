"""Every CUDA kernel the playbook renders for the catalog's GPU problems compiles for the H200's
architecture (sm_90, or sm_90a for a kernel that asks for the arch-specific target: wgmma) with NVRTC,
the compiler the kernels are built with on the GPU host, here on a machine without a GPU: NVRTC needs
no device. The options are the kernels' own (playbook/prelude.py: -std=c++17 -arch=sm_XY[a])."""

import ast
import ctypes
import glob
import os
import re

import pytest

import playbook
from searches import catalog
from tests.conftest import service_missing

GPU_PROBLEMS = [p for p in catalog.problems() if p.device == "cuda"]
ARCH = "sm_90"


@pytest.fixture(scope="module")
def nvrtc():
    import nvidia  # the nvidia-cuda-nvrtc wheel (requirements-dev.txt)

    found = [path for root in nvidia.__path__ for path in glob.glob(os.path.join(root, "cu*", "lib", "libnvrtc.so.*"))
             if re.search(r"libnvrtc\.so\.\d+$", path)]
    if not found:
        service_missing("NVRTC", "pip install nvidia-cuda-nvrtc (requirements-dev.txt)")
    return ctypes.CDLL(found[0])


def kernel_arch(recipe, variant: int) -> str:
    """The target the kernel module compiles itself for on the H200: sm_90 plus its Parts' arch_suffix."""
    return ARCH + recipe.render(recipe.variants[variant % len(recipe.variants)]).arch_suffix


def compile_source(nvrtc, source: str, name: str, arch: str = ARCH, extra: tuple[str, ...] = ()) -> tuple[int, str]:
    program = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), 0, None, None) == 0
    options = [b"-std=c++17", f"-arch={arch}".encode(), *(option.encode() for option in extra)]
    try:
        status = nvrtc.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        return status, log.value.decode(errors="replace")
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


def module_source(rendered: str) -> str:
    """The CUDA text of a rendered kernel module: its `_SOURCE` constant."""
    for node in ast.parse(rendered).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_SOURCE" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("the rendered module has no _SOURCE")


@pytest.mark.slow
@pytest.mark.parametrize("problem", GPU_PROBLEMS, ids=lambda p: p.key)
def test_every_cuda_kernel_of_the_playbook_compiles_for_the_h200(nvrtc, problem):
    failures, compiled = [], 0
    for recipe in playbook.recipes(problem.family, "cuda"):
        for variant in range(len(recipe.variants)):
            try:
                rendered = playbook.render(problem.source, problem.family, "cuda", recipe, variant)
            except playbook.ReadError:
                continue
            status, log = compile_source(nvrtc, module_source(rendered), f"{recipe.slug}_{variant}.cu",
                                         kernel_arch(recipe, variant))
            compiled += 1
            if status != 0:
                failures.append(f"{recipe.slug}/{variant}: {log.strip()[:600]}")
    assert compiled, f"no CUDA kernel rendered for {problem.key}"
    assert not failures, "\n".join(failures)
