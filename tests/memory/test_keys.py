"""The idea key's parts: a model's technique tag, a recipe's words, a problem's size class."""

from memory.keys import TECHNIQUES, IdeaKey, shape_class, technique_in, technique_of


def test_a_models_tag_maps_to_the_taxonomy_synonyms_and_case_aside():
    assert technique_of("Tensor Cores") == "tensor-cores"
    assert technique_of("  vectorized_loads ") == "vectorised-loads"
    assert technique_of("warp shuffle") == "warp-reductions"
    assert technique_of("WGMMA") == "tensor-cores"
    assert technique_of("a clever trick") == "other" and technique_of("") == "other"
    assert all(technique_of(slug) == slug for slug in TECHNIQUES)


def test_a_recipes_words_name_its_technique_where_plain():
    assert technique_in("float4_grid_stride") == "vectorised-loads"
    assert technique_in("wgmma_tf32x3") == "tensor-cores"
    assert technique_in("shared_tiles") == "tiling"
    assert technique_in("online") == "algorithm"
    assert technique_in("naive") == "other"


def test_size_classes_and_similarity():
    assert [shape_class(b) for b in (None, 0, 1e3, 1 << 20, 300 << 20)] == ["unknown", "unknown", "small", "medium",
                                                                             "large"]
    a = IdeaKey("softmax", "small", "NVIDIA H200", "cuda_nvrtc", "tiling")
    assert a.similar(IdeaKey("softmax", "small", "NVIDIA H200", "cuda_nvrtc", "fusion"))
    for other in (IdeaKey("matmul", "small", "NVIDIA H200", "cuda_nvrtc", "tiling"),
                  IdeaKey("softmax", "large", "NVIDIA H200", "cuda_nvrtc", "tiling"),
                  IdeaKey("softmax", "small", "NVIDIA H100", "cuda_nvrtc", "tiling"),
                  IdeaKey("softmax", "small", "NVIDIA H200", "triton", "tiling")):
        assert not a.similar(other)
