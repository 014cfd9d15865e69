"""The Hopper wgmma 3xTF32 matmul (playbook/kernels/matmul/wgmma_tf32x3.cu), checked without a GPU: it
ranks first among the matmul ideas, its module alone builds for the arch-specific target (sm_90a) while
every other kernel keeps the plain -arch=sm_XY, and NVRTC compiles it for sm_90a with no register spills
and no serialised wgmma, while a plain sm_90 build fails loudly rather than running a stub.
On the H200: the playbook GPU test on the small problems, scripts/gpu_playbook_check.py and scripts/gpu_seeds.sh."""

import re

import pytest

import playbook
from playbook import prelude
from searches import catalog
from tests.playbook.test_cuda_compile import compile_source, module_source, nvrtc  # noqa: F401 - the fixture

PROBLEM = catalog.get("matmul-4096x4096")
PLAIN_ARCH = 'options=("-std=c++17", f"-arch=sm_{major}{minor}"))'
SM90A_ARCH = 'options=("-std=c++17", f"-arch=sm_{major}{minor}{\'a\' if major >= 9 else \'\'}"))'


def wgmma_recipe():
    return next(r for r in playbook.recipes("matmul", "cuda") if r.slug == "wgmma_tf32x3")


def rendered(variant: int = 0) -> str:
    return playbook.render(PROBLEM.source, PROBLEM.family, "cuda", wgmma_recipe(), variant)


def test_wgmma_ranks_first_among_the_matmul_ideas_and_the_others_stay():
    slugs = [r.slug for r in playbook.recipes("matmul", "cuda")]
    assert slugs[:2] == ["naive", "wgmma_tf32x3"]
    assert {"double_buffering", "register_blocking", "shared_tiles", "tf32x3_tensor_cores"} <= set(slugs)


def test_only_a_kernel_that_asks_for_it_builds_for_the_arch_specific_target():
    assert prelude.cuda_arch("") == ""
    checked = 0
    for problem in catalog.problems():
        for family in playbook.families():
            for recipe in playbook.recipes(family, "cuda"):
                for variant in range(len(recipe.variants)):
                    try:
                        source = playbook.render(problem.source, family, "cuda", recipe, variant)
                    except playbook.ReadError:
                        continue
                    suffix = recipe.render(recipe.variants[variant]).arch_suffix
                    assert "@ARCH@" not in source
                    assert (SM90A_ARCH if suffix == "a" else PLAIN_ARCH) in source, f"{recipe.slug}/{variant}"
                    checked += 1
    assert checked > 20


def test_the_arch_suffix_is_an_f_string_field_of_the_build():
    major = 9
    assert eval(f'f"sm_{major}0{prelude.cuda_arch("a")}"') == "sm_90a"  # noqa: S307 - our own text
    major = 8
    assert eval(f'f"sm_{major}0{prelude.cuda_arch("a")}"') == "sm_80"  # noqa: S307


def test_the_module_falls_back_off_hopper_and_sizes_its_shared_memory():
    for variant, params in enumerate(wgmma_recipe().variants):
        source = rendered(variant)
        shared = params["stages"] * (2 * 16384 + 128 * 36 * 4) + 1024
        assert shared <= 227 * 1024
        assert "_WGMMA = torch.cuda.get_device_capability() == (9, 0)" in source
        assert f"_kernels['mm_wgmma_tf32x3'].max_dynamic_shared_size_bytes = {shared}" in source
        assert f"shared={shared})" in source
        assert "_launch(_kernels['mm_tiled']" in source  # other GPUs, K % 4, alignment
        for name, value in params.items():
            assert f"#define {name.upper()} {value}\n" in module_source(source)


@pytest.mark.slow
def test_wgmma_compiles_for_sm90a_without_spills_or_serialised_wgmma(nvrtc):  # noqa: F811
    for variant in range(len(wgmma_recipe().variants)):
        status, log = compile_source(nvrtc, module_source(rendered(variant)), f"wgmma_{variant}.cu", "sm_90a",
                                     ("--ptxas-options=-v",))
        assert status == 0, log[:2000]
        assert "Potential Performance Loss" not in log and "serialized" not in log, log
        properties = log.split("Function properties for mm_wgmma_tf32x3", 1)[1]
        assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", properties.split("\n", 2)[1]), properties
        registers = int(re.search(r"Used (\d+) registers", properties).group(1))
        assert registers <= 255, registers  # 256 threads, one block per SM


@pytest.mark.slow
def test_a_plain_sm90_build_fails_loudly(nvrtc):  # noqa: F811
    status, log = compile_source(nvrtc, module_source(rendered()), "wgmma_plain.cu", "sm_90")
    assert status != 0 and "sm_90a" in log
