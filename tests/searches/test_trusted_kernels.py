"""The team's memory trusts a kernel by one rule (searches/selectors/kernels.py): correct, not quarantined,
and reproduced by a verified rerun wherever a rerun ran. The query (`trusted_q`: the team's seeds) and the
test on rows (`kernel_is_trusted`: an idea's gains) pick the same kernels among every mix of the inputs."""

import itertools

import pytest

from searches.models import BenchmarkRun, Kernel
from searches.selectors.kernels import kernel_is_trusted, rerun_kernel_ids, trusted_q
from tests.searches import dashboard_data as d

pytestmark = pytest.mark.django_db


def test_the_trusted_query_and_the_row_test_agree_on_every_combination():
    search = d.search(problem=d.problem())
    for status, quarantined, verified, runs in itertools.product(
            ["correct", "incorrect"], [False, True], [False, True], [(), ("search",), ("rerun",), ("search", "rerun")]):
        kernel = Kernel.objects.create(problem=search.problem, search=search, source="x", status=status,
                                       median_ms=1.0, quarantined=quarantined, verified=verified)
        for purpose in runs:
            BenchmarkRun.objects.create(kernel=kernel, purpose=purpose, status=status)
    kernels = Kernel.objects.filter(search=search)
    reran = rerun_kernel_ids(kernels.values_list("id", flat=True))
    by_query = set(kernels.filter(trusted_q()).values_list("id", flat=True))
    by_rows = {k.id for k in kernels if kernel_is_trusted(k, reran)}
    by_values = {k["id"] for k in kernels.values("id", "status", "quarantined", "verified") if kernel_is_trusted(k, reran)}
    assert by_query and by_query == by_rows == by_values
    assert by_query != set(kernels.filter(status="correct", quarantined=False).values_list("id", flat=True))
    # a rerun that did not reproduce it takes it out; with no rerun it is trusted unverified
    assert {(k.verified, k.id in reran) for k in kernels if k.id in by_query} == {(False, False), (True, False),
                                                                                    (True, True)}
