"""The built-in playbook proposer: its kernels are judged correct by the real runner (real C
compiler, real sandbox), its ideas follow what was tried, and it says plainly what it cannot do."""

import re
import textwrap
from pathlib import Path

import pytest

import playbook
from proposers.base import IdeaProposal, KernelContext, ProblemContext, ProposerError, TriedIdea
from proposers.playbook import FAMILY_NAMES, PlaybookProposer
from playbook.reading import read_problem, static_value
from runner.common import launches
from runner.host.checks import check_source
from searches import catalog

CPU_PROBLEMS = [p for p in catalog.problems() if p.device == "cpu"]
PARENT = KernelContext(id=1, source="", status="correct")


def context(problem=None, *, source=None, family=None, device="cpu") -> ProblemContext:
    if problem is not None:
        return ProblemContext(name=problem.name, source=problem.source, device=problem.device, family=problem.family)
    return ProblemContext(name="user problem", source=textwrap.dedent(source), device=device, family=family)


def all_kernels(problem_context, variants="first"):
    """(label, source) for the starting kernel and each idea (first or every variant)."""
    proposer = PlaybookProposer()
    start, _ = proposer.starting_kernel(problem_context)
    yield "start", start.source
    ideas, _ = proposer.ideas(problem_context, PARENT, [], 99)
    for idea in ideas:
        recipes = playbook.recipes(problem_context.family, problem_context.device)
        recipe = next(r for r in recipes if r.title == idea.title)
        for variant in range(1 if variants == "first" else len(recipe.variants)):
            proposal, _ = proposer.kernel(problem_context, PARENT, idea, variant)
            yield f"{recipe.slug} v{variant}", proposal.source


def assert_all_correct(pool, problem_source, kernels, *, untimed=False):
    failures = []
    for label, source in kernels:
        result = pool.evaluate(problem_source, source, untimed=untimed)
        if result["status"] != "correct":
            failures.append(f"{label}: {result['status']}: {result['reason']}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("problem", CPU_PROBLEMS, ids=lambda p: p.key)
def test_starting_kernel_and_every_idea_are_correct_on_cpu(cpu_pool, problem):
    assert_all_correct(cpu_pool, problem.source, all_kernels(context(problem)))


@pytest.mark.slow
@pytest.mark.parametrize("problem", CPU_PROBLEMS, ids=lambda p: p.key)
def test_every_variant_is_correct_on_cpu(cpu_pool, problem):
    """The other variants of each idea (tile sizes, unrolling): judged by the trusted judge, untimed, since
    the timed path is the same code the first variants above take."""
    kernels = [k for k in all_kernels(context(problem), variants="all") if not k[0].endswith(" v0") and k[0] != "start"]
    assert_all_correct(cpu_pool, problem.source, kernels, untimed=True)


USER_PROBLEMS = {
    # shapes, dims and spellings the catalog does not use: the kernels read them at run time
    "softmax": """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def __init__(self, dim):
                super(Model, self).__init__()
                self.dim = dim
            def forward(self, x):
                return torch.nn.functional.softmax(x, dim=self.dim)
        def get_inputs():
            return [torch.randn(33, 7, 5)]
        def get_init_inputs():
            return [0]
    """,
    "layernorm": """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Model(nn.Module):
            def forward(self, x):
                return F.layer_norm(x, (37,), eps=1e-6)
        def get_inputs():
            return [torch.randn(5, 3, 37) * 3 + 2]
        def get_init_inputs():
            return []
    """,
    "elementwise": """
        import math
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def __init__(self, alpha=1.0):
                super().__init__()
                self.alpha = alpha
            def forward(self, x):
                y = torch.relu(x) * 2.0 + torch.nn.functional.elu(x, alpha=self.alpha)
                z = torch.tanh(math.sqrt(2.0 / math.pi) * torch.pow(x, 3.0)) + torch.pow(torch.abs(x), exponent=1.5)
                return y + torch.sigmoid(x) - x.clamp(min=-0.5, max=0.5) ** 2 + z
        def get_inputs():
            return [torch.randn(3, 1001)]
        def get_init_inputs():
            return [0.25]
    """,
    "reduction": """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                return torch.amax(x, dim=-1)
        def get_inputs():
            return [torch.randn(6, 9, 130)]
        def get_init_inputs():
            return []
    """,
    "matmul": """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.bmm(a, b)
        def get_inputs():
            return [torch.randn(3, 17, 29), torch.randn(3, 29, 13)]
        def get_init_inputs():
            return []
    """,
    "conv_relu_maxpool": """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Conv2d(4, 6, (3, 5), stride=(1, 2), padding=(1, 0), dilation=(2, 1), bias=False)
            def forward(self, x):
                return F.max_pool2d(F.relu(self.features(x)), 2, 2, padding=1)
        def get_inputs():
            return [torch.randn(2, 4, 19, 23)]
        def get_init_inputs():
            return []
    """,
}


@pytest.mark.slow  # each new problem costs the runner a validation and its baselines
@pytest.mark.parametrize("family", sorted(USER_PROBLEMS))
def test_kernels_are_generic_within_their_family(cpu_pool, family):
    problem_context = context(source=USER_PROBLEMS[family], family=family)
    kernels = list(all_kernels(problem_context))[:2]  # the starting kernel and the best idea
    assert_all_correct(cpu_pool, problem_context.source, kernels)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_ideas_follow_what_was_tried_until_the_playbook_is_exhausted(family, device):
    problem = next(p for p in catalog.problems() if p.family == family and p.device == device)
    proposer, problem_context = PlaybookProposer(), context(problem)
    everything, _ = proposer.ideas(problem_context, PARENT, [], 99)
    assert len({i.title for i in everything}) == len(everything) >= 1
    first, exchange = proposer.ideas(problem_context, PARENT, [], 1)
    assert first == everything[:1] and exchange.input_tokens == exchange.output_tokens == 0
    tried = [TriedIdea(idea.title, idea.description, "1/1 correct") for idea in first]
    rest, _ = proposer.ideas(problem_context, PARENT, tried, 99)
    assert rest == everything[1:]
    tried += [TriedIdea(i.title.upper(), i.description, "all failed: compile_error") for i in rest]
    none, exchange = proposer.ideas(problem_context, PARENT, tried, 3)
    assert none == [] and "no further ideas" in exchange.prompt


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_variants_are_distinct_deterministic_and_labelled(family, device):
    problem = next(p for p in catalog.problems() if p.family == family and p.device == device)
    proposer, problem_context = PlaybookProposer(), context(problem)
    ideas, _ = proposer.ideas(problem_context, PARENT, [], 99)
    for idea in ideas:
        recipe = next(r for r in playbook.recipes(family, device) if r.title == idea.title)
        sources = [proposer.kernel(problem_context, PARENT, idea, v)[0].source for v in range(len(recipe.variants))]
        assert len(set(sources)) == len(sources)
        again, exchange = proposer.kernel(problem_context, PARENT, idea, 0)
        assert again.source == sources[0]
        assert exchange.prompt.startswith(f"playbook: {family}/{device}/{recipe.slug} variant 0")
        assert exchange.input_tokens == exchange.output_tokens == 0
        assert "class ModelNew" in again.source


def test_a_variant_beyond_the_playbook_is_an_empty_proposal_not_a_duplicate():
    problem_context = context(catalog.get("softmax-cpu"))
    proposer = PlaybookProposer()
    idea = proposer.ideas(problem_context, PARENT, [], 1)[0][0]
    count = len(next(r for r in playbook.recipes("softmax", "cpu") if r.title == idea.title).variants)
    proposal, exchange = proposer.kernel(problem_context, PARENT, idea, count)
    assert proposal.source == "" and f"has {count} variant(s)" in proposal.note
    assert exchange.input_tokens == 0


def test_unknown_family_asks_for_the_anthropic_proposer():
    problem_context = context(source="class Model: pass", family="attention")
    with pytest.raises(ProposerError, match="knows softmax, layernorm.*family is attention: choose the Anthropic"):
        PlaybookProposer().starting_kernel(problem_context)
    with pytest.raises(ProposerError, match="family is unknown"):
        PlaybookProposer().ideas(context(source="", family=None), PARENT, [], 2)


def test_ideas_written_by_people_and_repairs_are_declined_clearly():
    problem_context = context(catalog.get("softmax-cpu"))
    proposer = PlaybookProposer()
    with pytest.raises(ProposerError, match="implements only its own ideas"):
        proposer.kernel(problem_context, PARENT, IdeaProposal("Use a lookup table for exp", "..."), 0)
    with pytest.raises(ProposerError, match="cannot be repaired"):
        proposer.repair(problem_context, PARENT, "error: expected ';'")


def test_an_op_the_playbook_cannot_translate_is_a_clear_error():
    source = """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                return torch.special.i0(x)
        def get_inputs():
            return [torch.randn(8)]
        def get_init_inputs():
            return []
    """
    with pytest.raises(ProposerError, match="no elementwise translation for 'torch.special.i0"):
        PlaybookProposer().starting_kernel(context(source=source, family="elementwise"))


KERNELBENCH = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"


def test_a_depthwise_convolution_is_declined_before_any_kernel_runs():
    depthwise = next(KERNELBENCH.glob("82_conv_depthwise_2D_*.py")).read_text()
    with pytest.raises(ProposerError, match=r"groups=1 convolutions; this nn.Conv2d has groups=in_channels = 64"):
        PlaybookProposer().starting_kernel(context(source=depthwise, family="conv2d", device="cuda"))
    # groups=groups, whose default of 1 get_init_inputs leaves alone: a plain convolution
    standard = next(KERNELBENCH.glob("55_conv_standard_2D_*.py")).read_text()
    start, _ = PlaybookProposer().starting_kernel(context(source=standard, family="conv2d", device="cuda"))
    assert "class ModelNew" in start.source


def test_more_work_around_the_product_or_the_convolution_is_declined():
    triu = next(KERNELBENCH.glob("14_Matmul_for_upper_triangular_*.py")).read_text()
    with pytest.raises(ProposerError, match=r"return a matrix product .* not 'torch.triu\(torch.matmul\(A, B\)\)'"):
        PlaybookProposer().starting_kernel(context(source=triu, family="matmul", device="cuda"))
    # KernelBench level 2 and 3: the family's op is there, with more work around it
    for name, family in (("level2/17_Conv2d_InstanceNorm_Divide.py", "conv2d"),
                         ("level2/66_Matmul_Dropout_Softmax.py", "softmax"),
                         ("level2/56_Matmul_Sigmoid_Sum.py", "reduction"),
                         ("level2/34_ConvTranspose3d_LayerNorm_GELU_Scaling.py", "layernorm"),
                         ("level3/10_ResNet101.py", "conv_relu_maxpool")):
        source = (KERNELBENCH.parent / name).read_text()
        with pytest.raises(ProposerError, match="as forward returns it, not"):
            PlaybookProposer().starting_kernel(context(source=source, family=family, device="cuda"))


@pytest.mark.slow
def test_transposed_operands_are_multiplied_right(cpu_pool):
    source = """
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, A, B):
                C = torch.matmul(A.T, B.T)
                return C
        def get_inputs():
            return [torch.randn(29, 17), torch.randn(13, 29)]
        def get_init_inputs():
            return []
    """
    problem_context = context(source=source, family="matmul")
    assert_all_correct(cpu_pool, problem_context.source, list(all_kernels(problem_context))[:2])


def test_init_values_come_from_get_init_inputs_constants_and_defaults():
    shape = read_problem(textwrap.dedent("""
        import torch.nn as nn
        C = 12
        class Model(nn.Module):
            def __init__(self, channels, kernel, scale=2.5, groups=1, mode=None):
                super().__init__()
            def forward(self, x):
                return x
        def get_init_inputs():
            return [C, 3, 0.5]
    """))
    assert shape.init_value("channels") == 12 and shape.init_value("kernel") == 3
    assert shape.init_value("scale") == 0.5 and shape.init_value("groups") == 1
    assert shape.init_value("mode") is None and shape.init_value("missing") is None
    assert static_value(shape, "C") == 12 and static_value(shape, "0.5") == 0.5
    computed = read_problem(textwrap.dedent("""
        import torch.nn as nn
        alpha = 0.1
        class Model(nn.Module):
            def __init__(self, alpha):
                super().__init__()
            def forward(self, x):
                return x
        def get_init_inputs():
            return [alpha * 2]
    """))
    assert static_value(computed, "alpha") is None  # the parameter's value is computed, not the constant's


@pytest.mark.gpu
@pytest.mark.parametrize("problem", CPU_PROBLEMS, ids=lambda p: p.key)
def test_cuda_kernels_are_correct_on_the_small_problems(cuda_pool, problem):
    """The CUDA playbook on the CPU-sized problems (the sources are device-agnostic), through the
    runner's CUDA sandbox; full sizes and timings are scripts/gpu_playbook_check.py's business."""
    problem_context = ProblemContext(name=problem.name, source=problem.source, device="cuda", family=problem.family)
    assert_all_correct(cuda_pool, problem.source, all_kernels(problem_context))


@pytest.mark.slow
def test_every_playbook_kernel_passes_the_runners_static_checks():
    """The playbook's kernels are honest: a false positive of runner.host.checks would reject them all."""
    rendered = 0
    for problem_path in sorted(catalog.PROBLEM_DIR.glob("*.py")):
        problem = problem_path.read_text()
        for family in playbook.families():
            for target in playbook.TARGETS:
                for recipe in playbook.recipes(family, target):
                    for variant in range(len(recipe.variants)):
                        try:
                            source = playbook.render(problem, family, target, recipe, variant)
                        except playbook.ReadError:  # the family does not fit this problem
                            continue
                        rendered += 1
                        found = check_source(source, reference_source=problem, device=target)
                        assert found == [], f"{problem_path.name} {family}/{target}/{recipe.slug}/{variant}: {found}"
    assert rendered >= 20


@pytest.mark.slow
def test_every_kernel_a_playbook_module_launches_counts_as_its_own():
    """The launch accounting (runner/common/launches.py) rejects a candidate that launches only kernels it
    does not define; every name a playbook module launches must be found in its own source."""
    launched_total = 0
    for problem_path in sorted(catalog.PROBLEM_DIR.glob("*.py")):
        problem = problem_path.read_text()
        for family in playbook.families():
            for recipe in playbook.recipes(family, "cuda"):
                for variant in range(len(recipe.variants)):
                    try:
                        source = playbook.render(problem, family, "cuda", recipe, variant)
                    except playbook.ReadError:
                        continue
                    own = launches.own_kernel_names(source)
                    launched = set(re.findall(r"_launch\(_kernels\['(\w+)'\]", source))
                    launched_total += len(launched)
                    assert launched <= own, f"{problem_path.name} {family}/{recipe.slug}/{variant}: {launched - own}"
    assert launched_total >= 20
