"""A problem's input memory read from its source without running it: KernelBench's constants
and factory calls folded on the syntax tree; anything it cannot read is unknown, not guessed."""

import ast
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.urls import reverse

from searches import services
from searches.problem_memory import MAX_STEPS, Budget, Unknown, fold, input_bytes, measure
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


# A problem's source is anyone's text, folded in the web process: every operation is bounded before it runs.
HEAD = "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n\n" \
    "def get_init_inputs():\n    return []\n\n\n"
EXPONENT_CHAIN = HEAD + "a = 10 ** 16\nb = a ** 64\nc = b ** 64\nd = c ** 64\ne = d ** 64\nf = e ** 64\n" \
    "def get_inputs():\n    return [torch.rand(f)]\n"
SUM_OF_1200 = HEAD + "a = 1\nn = " + " + ".join(["a"] * 1200) + "\ndef get_inputs():\n    return [torch.rand(n)]\n"
AFTER_RETURN = HEAD + "n = 10\ndef get_inputs():\n    return [torch.rand(n)]\n    unread = torch.rand(1000)\n" \
    + "    x = 10 ** 16\n    x = x ** 64\n    x = x ** 8\n"


def test_a_power_past_the_bound_is_refused_before_it_is_computed():
    with pytest.raises(Unknown):
        fold(ast.parse("a ** 64", mode="eval").body, {"a": 10 ** 16})
    with pytest.raises(Unknown):
        fold(ast.parse("a * a", mode="eval").body, {"a": 2 ** 64})
    assert fold(ast.parse("2 ** 40 * 3", mode="eval").body, {}) == 3 * 2 ** 40


@pytest.mark.parametrize("source", [EXPONENT_CHAIN, SUM_OF_1200], ids=["exponent-chain", "sum-of-1200"])
def test_a_hostile_size_is_unknown_after_a_bounded_fold(source):
    budget = Budget()
    assert measure(source, budget) is None
    assert budget.used < 100  # the chain stops at its first refused power, the sum at the depth bound
    assert input_bytes(source) is None


def test_nothing_after_get_inputs_return_is_read():
    budget = Budget()
    assert measure(AFTER_RETURN, budget) == 10 * 4
    assert budget.used < 20


def test_a_fold_stops_at_its_step_budget():
    counting = "a = a + 1\n" * (MAX_STEPS // 3 + 10)  # three nodes each
    source = HEAD + "a = 1\n" + counting + "def get_inputs():\n    return [torch.rand(a)]\n"
    budget = Budget()
    assert measure(source, budget) is None
    assert budget.used == MAX_STEPS


@pytest.mark.parametrize("expression", ["-" * 100_000 + "1", "not " * 100_000 + "1", "a." * 100_000 + "b"])
def test_a_source_too_deep_to_parse_is_unknown(expression):
    assert input_bytes(HEAD + f"n = {expression}\ndef get_inputs():\n    return [torch.rand(4)]\n") is None


def _get(url: str, session: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Cookie": f"sessionid={session}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310  the test's own server
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("source", [EXPONENT_CHAIN, SUM_OF_1200], ids=["exponent-chain", "sum-of-1200"])
def test_a_hostile_problem_page_says_size_unknown_and_the_server_keeps_answering(live_server, client, source):
    input_bytes.cache_clear()
    user = d.user()
    problem = services.problem_create(user=user, name="Hostile sizes", source=source)
    client.force_login(user)
    session = client.cookies["sessionid"].value
    page = {}
    viewer = threading.Thread(target=lambda: page.update(
        result=_get(live_server.url + reverse("problem_detail", args=[problem.code]), session)))
    viewer.start()
    login_status, _ = _get(live_server.url + reverse("login"), "")
    viewer.join(timeout=60)
    assert login_status == 200
    status, body = page["result"]
    assert status == 200
    assert 'id="input-memory">Inputs: size unknown' in body
