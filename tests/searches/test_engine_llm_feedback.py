"""Lossless feedback, read off the requests the local fake Messages API received from the real
`anthropic` SDK: the compiler's first error lines, each brief with its verdict, a quarantined
kernel's speed never advertised, the eager time a CPU speedup was measured against."""

import pytest

from evaluation import leases
from runner.common.compile import first_errors
from searches import services
from searches.engine import loop
from searches.models import Kernel
from tests.fakes.anthropic_server import task_of

from .test_engine import problem, runner_verdict  # noqa: F401  (fixture)
from .test_engine_llm import fake, kicks, start  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)  # proposer calls run on threads

LOG = ("/tmp/k.c: In function 'softmax_rows':\n/tmp/k.c:5:3: error: 'yy' undeclared (first use in this function)\n"
       "/tmp/k.c:5:3: note: each undeclared identifier is reported only once\n" + "/tmp/k.c:9:1: warning: unused\n" * 400)


def judge_each(verdict_for):
    while (job := leases.claim("test-worker", "cpu")) is not None:
        services.kernel_record_verdict(kernel=job.kernel, job=job, result=verdict_for(job.kernel))


def compile_error(kernel):
    verdict = runner_verdict("compile_error", log=LOG)
    verdict["reason"] = f"the kernel did not compile: {first_errors(LOG, 200)}"
    return verdict


def quarantined(kernel):
    verdict = runner_verdict("correct", median_ms=0.01)
    verdict.update(quarantined=True, quarantine_reason="faster than the memory allows")
    return verdict


def paired(kernel, median_ms=0.5):
    verdict = runner_verdict("correct", median_ms=median_ms)
    verdict["paired"] = {"eager_ms": 0.9, "dropped": None, "blocks": 8, "speedup_ci95": [1.7, 1.9]}
    verdict["speedup_vs_eager"] = 0.9 / median_ms
    return verdict


@pytest.mark.slow
def test_the_next_requests_carry_the_compile_error_each_brief_with_its_verdict_and_no_quarantined_speed(problem, fake):
    search = start(problem, rounds=2, kernels_per_idea=2, repair_attempts=1)
    loop.advance(search.id)
    judge_each(lambda k: runner_verdict("correct", median_ms=1.0))
    loop.advance(search.id)  # round 1: ideas, two kernels
    judge_each(lambda k: compile_error(k) if k.variant == 0 else quarantined(k))
    loop.advance(search.id)  # the compile error's repair
    [repair] = [s for s in fake.requests if task_of(s) == "repair"]
    assert "the kernel did not compile: /tmp/k.c:5:3: error: 'yy' undeclared" in repair.user_text
    # The log from its first error, not its tail of warnings.
    assert "Compiler output, from its first error:" in repair.user_text
    assert "In function 'softmax_rows':\n/tmp/k.c:5:3: error: 'yy' undeclared" in repair.user_text

    Kernel.objects.filter(search=search, origin="repair").update(analysis={"expected_speedup": 3.0})
    judge_each(paired)
    loop.advance(search.id)  # round 2's ideas
    ideas = [s for s in fake.requests if task_of(s) == "ideas"][-1]
    tried = ideas.user_text.split("Ideas already tried")[1]
    assert "why: the kernel did not compile: /tmp/k.c:5:3: error: 'yy' undeclared" in tried
    # The repair's parent is the broken kernel (no time): no expectation to compare with.
    assert ("brief 1.1: block size 64 => compile_error, repaired: correct, 0.5 ms (1.80x vs eager 0.9 ms, timed "
            "beside it)\n") in tried
    assert "brief 1.2: block size 128 => correct, under review (no speed given)" in tried
    assert "0.01" not in tried and "50.00x" not in tried  # the quarantined kernel's speed, nowhere
    assert Kernel.objects.filter(search=search, quarantined=True).count() == 1
