"""What makes two idea outcomes comparable: the key the idea bank and the lesson ledger share.

An outcome counts for another search when the problems are of one op family and size class, on one
device model, in one kernel language, with one technique. Plain Python: no Django, no `searches`."""

import re
from dataclasses import dataclass

# The technique taxonomy the ideas call tags each idea with (slug: what it covers, as the model is told).
TECHNIQUES = {
    "tiling": "blocking the work into tiles held in shared memory or registers",
    "vectorised-loads": "wider loads and stores (float4, 128-bit), coalescing",
    "warp-reductions": "reductions with warp shuffles or cooperative groups instead of shared-memory trees",
    "tensor-cores": "MMA instructions (wmma, mma.sync, wgmma) or TF32/bf16 tensor-core paths",
    "fusion": "several operations in one kernel, intermediates kept on chip",
    "persistent": "persistent or grid-stride kernels, one launch covering the whole problem",
    "cuda-graphs": "capturing launches in a CUDA graph to cut launch overhead",
    "precision": "lower or mixed precision arithmetic within the problem's tolerance",
    "launch-config": "block size, grid shape, occupancy and register tuning",
    "memory-layout": "transposes, padding, layouts that avoid bank conflicts or strided access",
    "algorithm": "a different algorithm (online softmax, Winograd, split-K, ...)",
    "library": "calling a vendor library (cuBLAS, cuDNN) from the kernel",
    "other": "anything the other techniques do not name",
}

_ALIASES = {
    "tile": "tiling", "tiled": "tiling", "shared-memory": "tiling", "smem": "tiling", "blocking": "tiling",
    "vectorized-loads": "vectorised-loads", "vectorization": "vectorised-loads", "vectorisation": "vectorised-loads",
    "float4": "vectorised-loads", "coalescing": "vectorised-loads",
    "warp-shuffle": "warp-reductions", "shuffle": "warp-reductions", "warp-reduction": "warp-reductions",
    "tensor-core": "tensor-cores", "wgmma": "tensor-cores", "mma": "tensor-cores", "wmma": "tensor-cores",
    "kernel-fusion": "fusion", "fused": "fusion", "persistent-kernel": "persistent", "grid-stride": "persistent",
    "cuda-graph": "cuda-graphs", "graphs": "cuda-graphs", "mixed-precision": "precision", "fp16": "precision",
    "bf16": "precision", "tf32": "precision", "occupancy": "launch-config", "block-size": "launch-config",
    "layout": "memory-layout", "bank-conflicts": "memory-layout", "cublas": "library", "cudnn": "library",
}

# Size classes by the problem's least bytes moved (one read of the inputs, one write of the outputs).
_SHAPE_LIMITS = ((1 << 20, "small"), (256 << 20, "medium"))


def technique_of(tag: str) -> str:
    """The taxonomy slug for a model's tag: known slugs and common synonyms map, anything else is "other"."""
    slug = re.sub(r"[^a-z0-9]+", "-", (tag or "").strip().lower()).strip("-")
    if slug in TECHNIQUES:
        return slug
    return _ALIASES.get(slug, "other")


# Words in a title or slug that name a technique plainly enough to tag a written idea (the playbook's recipes).
_WORDS = (("wgmma", "tensor-cores"), ("tensor", "tensor-cores"), ("mma", "tensor-cores"), ("tf32", "precision"),
          ("float4", "vectorised-loads"), ("vector", "vectorised-loads"), ("simd", "vectorised-loads"),
          ("shuffle", "warp-reductions"), ("warp", "warp-reductions"), ("persistent", "persistent"),
          ("grid stride", "persistent"), ("tile", "tiling"), ("shared", "tiling"), ("blocking", "tiling"),
          ("buffer", "tiling"), ("fuse", "fusion"), ("fused", "fusion"), ("graph", "cuda-graphs"),
          ("online", "algorithm"), ("gemm", "algorithm"), ("interchange", "memory-layout"), ("order", "memory-layout"),
          ("openmp", "launch-config"), ("block", "launch-config"), ("thread", "launch-config"))


def technique_in(text: str) -> str:
    """The technique a title or slug names plainly ("float4_grid_stride" -> vectorised-loads), else "other"."""
    words = re.sub(r"[^a-z0-9]+", " ", (text or "").lower())
    for word, technique in _WORDS:
        if re.search(rf"\b{word}", words):
            return technique
    return "other"


def shape_class(min_bytes: float | None) -> str:
    """"small", "medium" or "large" by the bytes a problem must move; "unknown" before validation says."""
    if not min_bytes:
        return "unknown"
    for limit, name in _SHAPE_LIMITS:
        if min_bytes < limit:
            return name
    return "large"


@dataclass(frozen=True)
class IdeaKey:
    family: str  # the problem's op family as validation named it (Problem.family)
    shape_class: str  # shape_class(Problem.min_bytes)
    device_model: str  # the GPU's name as the runner reported it (Kernel.device_name), or "cpu"
    language: str  # the kernel language (proposers.prompts.LANGUAGES)
    technique: str  # a TECHNIQUES slug

    def similar(self, other: "IdeaKey") -> bool:
        """Another search's outcome applies here: same family, size class, device model and language."""
        return (self.family, self.shape_class, self.device_model, self.language) == (
            other.family, other.shape_class, other.device_model, other.language)
