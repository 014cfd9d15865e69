"""How `manage.py bench_suite` groups a level's problems into batches (benches/suite_bench.py):
by count, and by their estimated device memory, on KernelBench's own level-1 sources; and which
problems done before its --again puts back to do."""

from pathlib import Path

import pytest
from types import SimpleNamespace

from benches import suite_bench
from searches.models import Problem

LEVEL1 = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench" / "level1"
GIB = 2**30


def member(name: str, min_bytes: float | None = None):
    return SimpleNamespace(name=name, problem=Problem(source=(LEVEL1 / name).read_text(), min_bytes=min_bytes))


def names(groups) -> list[list[str]]:
    return [[m.name.split("_")[0] for m in group] for group in groups]


def test_the_memory_need_is_validations_measure_else_the_inputs_read_from_the_source():
    relu = member("19_ReLU.py")  # x = torch.rand(4096, 393216): 6 GiB of float32
    assert suite_bench.memory_need(relu.problem) == suite_bench.MEMORY_FACTOR * 6 * GIB
    measured = member("19_ReLU.py", min_bytes=12 * GIB)  # inputs and outputs, as validation counts them
    assert suite_bench.memory_need(measured.problem) == suite_bench.MEMORY_FACTOR * 12 * GIB
    unreadable = SimpleNamespace(problem=Problem(source="def get_inputs():\n    return [make()]\n"))
    assert suite_bench.memory_need(unreadable.problem) is None


def test_batches_fill_up_to_the_count_or_the_memory_budget():
    small = [member(n) for n in ("55_conv_standard_2D__asymmetric_input__square_kernel.py",
                                 "56_conv_standard_2D__asymmetric_input__asymmetric_kernel.py",
                                 "62_conv_standard_2D__square_input__asymmetric_kernel.py",
                                 "80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__.py")]
    large = [member(n) for n in ("19_ReLU.py", "21_Sigmoid.py", "22_Tanh.py")]  # 6 GiB inputs each
    huge = member("45_Average_Pooling_2D.py")  # 16 GiB inputs: 128 GiB needed, past the budget
    budget = 100 * GIB  # about 60% of an H200
    # the four convolutions need 14 GiB, a 6 GiB elementwise problem 48 GiB
    assert names(suite_bench.batches(small + large + [huge], 6, budget)) == \
        [["55", "56", "62", "80", "19"], ["21", "22"], ["45"]]
    assert names(suite_bench.batches(small + large, 2, budget)) == [["55", "56"], ["62", "80"], ["19", "21"], ["22"]]
    assert names(suite_bench.batches(small + large, 3, None)) == [["55", "56", "62"], ["80", "19", "21"], ["22"]]


def test_a_problem_of_unknown_size_goes_alone():
    unknown = SimpleNamespace(name="93_masked_cumsum.py", problem=Problem(source="def get_inputs():\n    return [f()]\n"))
    small = [member("56_conv_standard_2D__asymmetric_input__asymmetric_kernel.py"),
             member("62_conv_standard_2D__square_input__asymmetric_kernel.py")]
    assert names(suite_bench.batches([small[0], unknown, small[1]], 8, 100 * GIB)) == [["56"], ["93"], ["62"]]


def test_again_puts_problems_done_before_back_by_number_or_file_name():
    report = {"problems": {"11_4D.py": {"number": 11, "done": True}, "56_conv.py": {"number": 56, "done": True},
                           "19_ReLU.py": {"number": 19, "done": True}}}
    assert suite_bench.undo(report, ["11", "56_conv.py"]) == ["11_4D.py", "56_conv.py"]
    assert [row["done"] for row in report["problems"].values()] == [False, False, True]
    with pytest.raises(ValueError, match="'7': no problem of the report"):
        suite_bench.undo(report, ["7"])
