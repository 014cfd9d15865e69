"""An agent's tool run through the worker: the draft from the job's options goes to the runner (built
only for `compile`, judged untimed for `check`), the answer is kept on the job, and no kernel or verdict is touched.
test_engine_agent_e2e.py runs the same through the real runner."""

from contextlib import contextmanager

import pytest

from evaluation import leases, queue
from evaluation.models import EvaluationJob
from evaluation.worker import EvaluationWorker
from searches.models import BenchmarkRun
from tests.searches.test_engine import problem, runner_verdict  # noqa: F401  (fixture)
from tests.searches.test_engine_llm import start

# the worker writes each phase from a thread of its own, on its own connection: it must see committed rows
pytestmark = pytest.mark.django_db(transaction=True)


class Pool:
    def __init__(self, answer):
        self.answer, self.asked = answer, []

    @contextmanager
    def scope(self, on_phase=None):
        yield self

    def cancel(self):
        pass

    def evaluate(self, problem_source, kernel_source, **options):
        self.asked.append((kernel_source, options))
        return self.answer


@pytest.mark.parametrize("tool,compile_only,untimed", [("compile", True, False), ("check", False, True),
                                                       ("profile", False, False)])
def test_a_tool_run_is_run_on_its_draft_and_answered_on_its_job(problem, monkeypatch, tool, compile_only, untimed):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unused")
    search = start(problem, agent_mode=True, allow_library=True)
    job = queue.enqueue_tool(search, tool=tool, source="class ModelNew: pass  # draft\n")
    assert (job.priority, job.max_attempts, job.kernel_id) == (10, 1, None)  # ahead of candidates: a model waits
    claimed = leases.claim("tool-worker", "cpu")
    assert claimed.pk == job.pk
    pool = Pool({**runner_verdict("compile_error"), "log": "kernel.c:1:1: error: nope"})
    EvaluationWorker(name="tool-worker", device="cpu").run_job(pool, claimed)
    [(source, options)] = pool.asked
    assert source == "class ModelNew: pass  # draft\n"
    assert (options["compile_only"], options["untimed"], options["allow_library"]) == (compile_only, untimed, True)
    job.refresh_from_db()
    assert job.status == EvaluationJob.Status.DONE
    assert job.result["status"] == "compile_error" and job.result["log"] == "kernel.c:1:1: error: nope"
    assert "environment" not in job.result  # the answer for the model, nothing of the host
    assert not BenchmarkRun.objects.exists()  # advice, never a verdict


def test_a_tool_run_on_a_load_inline_draft_counts_as_a_long_build(problem, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unused")
    search = start(problem, agent_mode=True)
    plain = queue.enqueue_tool(search, tool="check", source="class ModelNew: pass\n")
    inline = queue.enqueue_tool(search, tool="check", source="from torch.utils.cpp_extension import load_inline\n")
    assert (leases.builds(plain), leases.builds(inline)) == (False, True)
