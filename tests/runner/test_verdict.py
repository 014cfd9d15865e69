"""runner.Verdict names every key of the verdict, and nothing else."""

import typing

import runner
from runner.host import evaluation


def test_the_verdict_type_names_every_key_of_a_verdict():
    assert runner.Verdict.__required_keys__ == set(evaluation.empty_verdict(0))
    assert set(typing.get_type_hints(runner.Verdict)) == set(evaluation.empty_verdict(0)) | {"exchange"}
