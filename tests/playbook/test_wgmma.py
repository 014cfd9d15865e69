"""The Hopper wgmma 3xTF32 kernels, the matmul (playbook/kernels/matmul/wgmma_tf32x3.cu) and the implicit-GEMM
convolution (playbook/kernels/conv/wgmma_tf32x3.cu), checked without a GPU: each ranks first among its family's
ideas, only their modules build for the arch-specific target (sm_90a) while every other kernel keeps the plain
-arch=sm_XY, and NVRTC compiles them for sm_90a with no register spills and no serialised wgmma, while a plain
sm_90 build fails loudly rather than running a stub. The convolution's forward sizes its shared memory from the
problem and takes it on the catalog's AlexNet layer, and falls back to the direct kernels elsewhere.
On the H200: the playbook GPU test on the small problems, scripts/gpu_playbook_check.py and scripts/gpu_seeds.sh."""

import re

import pytest

import playbook
from playbook import prelude
from searches import catalog
from tests.playbook.test_cuda_compile import compile_source, module_source, nvrtc  # noqa: F401 - the fixture

PROBLEM = catalog.get("matmul-4096x4096")
CONV_PROBLEMS = [catalog.get("conv2d-100x3x224x224"), catalog.get("conv-relu-maxpool-100x3x224x224")]
PLAIN_ARCH = 'options=("-std=c++17", f"-arch=sm_{major}{minor}"))'
SM90A_ARCH = 'options=("-std=c++17", f"-arch=sm_{major}{minor}{\'a\' if major >= 9 else \'\'}"))'


def wgmma_recipe():
    return next(r for r in playbook.recipes("matmul", "cuda") if r.slug == "wgmma_tf32x3")


def rendered(variant: int = 0) -> str:
    return playbook.render(PROBLEM.source, PROBLEM.family, "cuda", wgmma_recipe(), variant)


def conv_recipe(problem):
    return next(r for r in playbook.recipes(problem.family, "cuda") if r.slug == "implicit_gemm_wgmma_tf32x3")


def conv_rendered(problem, variant: int = 0) -> str:
    return playbook.render(problem.source, problem.family, "cuda", conv_recipe(problem), variant)


# (rendered module, kernel, id) for every variant of both wgmma kernels
BUILDS = [(lambda v=v: rendered(v), "mm_wgmma_tf32x3", f"matmul/{v}") for v in range(len(wgmma_recipe().variants))] + [
    (lambda p=p, v=v: conv_rendered(p, v), "conv_wgmma_tf32x3", f"{p.key}/{v}")
    for p in CONV_PROBLEMS for v in range(len(conv_recipe(p).variants))]


def test_wgmma_ranks_first_among_the_matmul_ideas_and_the_others_stay():
    slugs = [r.slug for r in playbook.recipes("matmul", "cuda")]
    assert slugs[:2] == ["naive", "wgmma_tf32x3"]
    assert {"double_buffering", "register_blocking", "shared_tiles", "tf32x3_tensor_cores"} <= set(slugs)


@pytest.mark.parametrize("problem", CONV_PROBLEMS, ids=lambda p: p.key)
def test_the_wgmma_convolution_ranks_first_among_the_conv_ideas_and_the_others_stay(problem):
    slugs = [r.slug for r in playbook.recipes(problem.family, "cuda")]
    assert slugs[:3] == ["direct", "implicit_gemm_wgmma_tf32x3", "direct_register_tiled"]
    assert {"direct_oc_blocked", "implicit_gemm_db", "implicit_gemm"} <= set(slugs)
    assert all(conv_recipe(problem).render(v).arch_suffix == "a" for v in conv_recipe(problem).variants)


def _wgmma_plan(source: str, **geometry) -> dict:
    """Run the lines of the rendered forward that size the wgmma convolution on the given geometry."""
    lines = source.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith("K = cin * kh * kw"))
    last = next(i for i, line in enumerate(lines) if line.strip().startswith("cw_shared = "))
    plan = dict(geometry)
    exec("\n".join(line.strip() for line in lines[first:last + 1]), {}, plan)  # noqa: S102 - our own text
    return plan


@pytest.mark.parametrize("problem", CONV_PROBLEMS, ids=lambda p: p.key)
def test_the_wgmma_convolution_fits_the_alexnet_layer_and_falls_back_elsewhere(problem):
    alexnet = {"cin": 3, "cout": 96, "kh": 11, "kw": 11, "oh": 55, "ow": 55, "sh": 4, "sw": 4, "dh": 1, "dw": 1}
    limit = 232448  # the H200's opt-in shared memory per block
    for variant, params in enumerate(conv_recipe(problem).variants):
        source = conv_rendered(problem, variant)
        plan = _wgmma_plan(source, **alexnet)
        # 128 pixels span at most 4 output rows: (4 - 1) * 4 + 11 input rows, 54 * 4 + 11 columns
        assert (plan["K"], plan["Kp"], plan["Np"], plan["xr"], plan["xw"]) == (363, 384, 96, 23, 227)
        # the ring, alignment room, two row buffers of 3 x 23 x 227 floats (rounded up to 4), the tap table
        assert plan["cw_shared"] == params["stages"] * 24576 + 1024 + 2 * 4 * 15664 + 4 * 384 <= limit
        assert "if _WGMMA and cw_shared <= _SHARED_LIMIT and Kp // 32 >=" in source
        assert "_launch(_kernels['dconv_k11s4']" in source and "_launch(_kernels['conv_ocb']" in source
        for name, value in params.items():
            assert f"#define {name.upper()} {value}\n" in module_source(source)
    # a wide layer with many channels does not fit: forward takes the direct kernels
    wide = _wgmma_plan(conv_rendered(problem), **{**alexnet, "cin": 64})
    assert wide["cw_shared"] > limit


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
@pytest.mark.parametrize("build", BUILDS, ids=lambda b: b[2])
def test_wgmma_compiles_for_sm90a_without_spills_or_serialised_wgmma(nvrtc, build):  # noqa: F811
    source, kernel, name = build
    status, log = compile_source(nvrtc, module_source(source()), f"{name.replace('/', '_')}.cu", "sm_90a",
                                 ("--ptxas-options=-v",))
    assert status == 0, log[:2000]
    assert "Potential Performance Loss" not in log and "serialized" not in log, log
    properties = log.split(f"Function properties for {kernel}", 1)[1]
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", properties.split("\n", 2)[1]), properties
    registers = int(re.search(r"Used (\d+) registers", properties).group(1))
    assert registers <= 255, registers  # 256 threads, one block per SM


@pytest.mark.slow
@pytest.mark.parametrize("build", [BUILDS[0], BUILDS[-1]], ids=lambda b: b[2])
def test_a_plain_sm90_build_fails_loudly(nvrtc, build):  # noqa: F811
    source, _, name = build
    status, log = compile_source(nvrtc, module_source(source()), "wgmma_plain.cu", "sm_90")
    assert status != 0 and "sm_90a" in log
