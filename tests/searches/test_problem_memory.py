"""A problem's input memory read from its source without running it: KernelBench's constants
and factory calls folded on the syntax tree; anything it cannot read is unknown, not guessed."""

from pathlib import Path

import pytest
from django.urls import reverse

from searches import services
from searches.problem_memory import input_bytes
from tests.searches import dashboard_data as d

KERNELBENCH = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"


def problem(body: str, head: str = "") -> str:
    return f"import torch\n{head}\ndef get_inputs():\n{body}\n"


@pytest.mark.parametrize(("source", "expected"), [
    (problem("    return [torch.rand(batch_size, dim)]", "batch_size = 4096\ndim = 393216"), 4096 * 393216 * 4),
    (problem("    return [torch.randn(n, *shape, dtype=torch.float16)]", "n = 2\nshape = (3, 4)"), 2 * 3 * 4 * 2),
    (problem("    return [torch.randint(0, 10, (b,)), torch.zeros(b * 2, b)]", "b = h = 8"), 8 * 8 + 16 * 8 * 4),
    (problem("    return [torch.rand(d, h, w)]", "d, h, w = 2, 3, 4"), 2 * 3 * 4 * 4),
    (problem("    x = torch.rand(n)\n    return [x, torch.ones(size=(n, n), dtype=torch.float64)]", "n = 10"),
     10 * 4 + 100 * 8),
    (problem("    return [torch.rand(n) for _ in range(3)]", "n = 10"), None),  # a loop: counted once would be wrong
    (problem("    x = torch.rand(n)\n    return [x, torch.randint(0, 2, x.shape)]", "n = 10"), None),
    (problem("    return [torch.rand(load())]"), None),
    (problem("    return [5]"), None),
    ("def broken(:", None),
])
def test_input_bytes(source, expected):
    assert input_bytes(source) == expected


def test_kernelbench_levels_one_to_three_are_read_but_one():
    files = sorted(KERNELBENCH.glob("level*/*.py"))
    unread = [f.name for f in files if input_bytes(f.read_text()) is None]
    assert len(files) == 250 and unread == ["93_masked_cumsum.py"]  # its mask's shape comes from a tensor
    assert input_bytes((KERNELBENCH / "level1" / "19_ReLU.py").read_text()) == 4096 * 393216 * 4


@pytest.mark.django_db
def test_the_import_report_suite_page_and_problem_page_show_it(client):
    client.force_login(d.user())
    relu = KERNELBENCH / "level1" / "19_ReLU.py"
    report = services.suite_import(user=None, suite_name="Memory", files=[(f"level1/{relu.name}", relu.read_bytes())])
    assert report.rows[0].input_bytes == 4096 * 393216 * 4
    suite_page = client.get(reverse("suite_detail", args=[report.suite.code])).content.decode()
    assert '<td class="num input-bytes">6.44 GB</td>' in suite_page
    problem_page = client.get(reverse("problem_detail", args=[report.rows[0].problem.code])).content.decode()
    assert 'id="input-memory">Inputs: 6.44 GB for one set' in problem_page
