"""The prompt is decided in proposers/prompts.py alone: the kernel format people read in
docs/KERNEL_FORMAT.md is the one the model reads, loaded once; the engine's wording of a
kernel's speed of light comes from here too."""

from pathlib import Path

from proposers import prompts
from proposers.base import KernelContext, ProblemContext

ROOT = Path(__file__).resolve().parents[2]


def test_the_system_prompt_carries_the_kernel_format_document():
    problem = ProblemContext(name="softmax", source="class Model: ...", device="cpu", description="rows")
    rules, context = prompts.system_blocks(problem)
    assert rules["text"] == prompts.RULES + (ROOT / "docs" / "KERNEL_FORMAT.md").read_text()
    assert "cache_control" in context and prompts.fence("problem_source", problem.source) in context["text"]


def test_a_kernel_is_shown_with_its_verdict_and_speed_of_light():
    sol = {"fraction": 0.72, "device": "NVIDIA H200", "floor_ms": 0.505, "bound": "memory", "basis": "4.8 TB/s"}
    kernel = KernelContext(id=7, source="class ModelNew: ...", status="correct", median_ms=0.7,
                           speedup_vs_eager=2.0, speed_of_light=prompts.speed_of_light_text(sol))
    block = prompts.kernel_block("parent_kernel", kernel)
    assert block.startswith("Kernel #7; verdict: correct, median 0.7 ms, 2.00x vs eager, 72% of the speed of light "
                            "on the NVIDIA H200 (floor 0.505 ms, memory-bound: 4.8 TB/s).")


def test_the_runners_notes_are_shown_with_the_kernel_and_fenced():
    kernel = KernelContext(id=3, source="class ModelNew: ...", status="correct", median_ms=0.7,
                           notes=("line 9: the except block falls back to PyTorch (silu)",))
    block = prompts.kernel_block("parent_kernel", kernel)
    assert "The runner's notes on it (advice, not the verdict):" in block
    assert prompts.fence("parent_kernel_notes", "- line 9: the except block falls back to PyTorch (silu)") in block
    assert "notes" not in prompts.kernel_block("parent_kernel", KernelContext(id=3, source="s", status="correct"))
