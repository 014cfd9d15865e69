"""Agent mode end to end: `manage.py search --agent-mode` (the engine, its evaluator child and the real
runner on CPU) with the real `anthropic` SDK against the local fake Messages API. The model compiles a
broken draft, reads the real compiler's error in the next request, checks a fixed one, and then has
to submit: each tool call a runner job in the sandbox, counted against the candidates budget."""

import json

import pytest

from proposers import prompts
from tests.fakes.anthropic_server import FakeAnthropic, ToolCall, kernel_call, task_of

from .engine_env import env_for, manage, query, validated_db
from .test_engine_llm_e2e import MAX_LINE, good_kernel

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

KEY = "sk-ant-agent-e2e-test-key"


class Agent:
    """The starting kernel's call: compile a broken draft, then check the fixed one (the cap, 2, is
    then spent: the next turn forces submit_kernel); no ideas after it."""

    def __init__(self):
        self.broken = good_kernel("draft").replace(MAX_LINE, "yy_row_max = 0; " + MAX_LINE)

    def __call__(self, seen):
        if task_of(seen) == "ideas":
            return {"ideas": []}
        turn = sum(1 for m in seen.body["messages"] if m["role"] == "assistant")
        if turn == 0:
            return ToolCall("compile", {"source": self.broken})
        if turn == 1:
            return ToolCall("check", {"source": good_kernel("checked")})
        return kernel_call(good_kernel("submitted"))


def test_a_compile_error_reaches_the_next_request_and_the_cap_forces_the_submission(tmp_path):
    db, problem_id = validated_db(tmp_path)
    env = env_for(db, ANTHROPIC_API_KEY=KEY, ANTHROPIC_TIMEOUT="30")
    with FakeAnthropic(responder=Agent()) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.url
        result = manage(db, "search", str(problem_id), "--proposer", "anthropic", "--no-progress", "--rounds", "1",
                        "--parents", "1", "--ideas", "1", "--kernels", "1", "--repairs", "0", "--bank", "0",
                        "--language", "c", "--agent-mode", "--agent-tool-calls", "2", "--max-candidates", "20",
                        env=env, timeout=800, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    first, second, third = [s for s in fake.requests if task_of(s) == "starting kernel"]
    assert [t["name"] for t in first.body["tools"]][2:] == ["compile", "check", "profile"]

    # The real compiler's error, from the runner's sandbox, is the tool_result of the compile call.
    [compiled] = second.tool_results
    assert compiled["content"].startswith("It does not build. Compiler output, from its first error:")
    assert "error:" in compiled["content"] and "yy_row_max" in compiled["content"]
    [checked] = third.tool_results
    assert checked["content"] == "Correct on the problem's 3 input distributions (get_inputs, uniform, offset)."
    # The cap (2) is spent: the last turn forces the submission.
    assert third.body["tool_choice"] == {"type": "tool", "name": "submit_kernel"}
    assert prompts.agent_last_turn(2) in [b.get("text") for b in third.body["messages"][-1]["content"]]

    # Two runner jobs of the tool purpose, run by the evaluator, answered (advice: never a kernel's verdict).
    jobs = query(db, "select status, options, result, kernel_id from searches_evaluationjob where purpose='tool' "
                     "order by id")
    assert [(j[0], json.loads(j[1])["tool"], json.loads(j[2])["status"], j[3]) for j in jobs] == [
        ("done", "compile", "compile_error", None), ("done", "check", "correct", None)]
    [(status, source, call_id)] = query(db, "select status, source, call_id from searches_kernel")
    assert status == "correct" and "TAG = 'submitted'" in source  # judged afresh as a candidate
    [(tool_calls, reply)] = query(db, "select tool_calls, reply from searches_proposercall where id=?", (call_id,))
    assert tool_calls == 2 and "[compile result, tool call 1 of 2]" in reply and "[check result, tool call 2 of 2]" in reply
    # The runs count against the candidates budget beside the kernel.
    [(search_status, reason)] = query(db, "select status, stop_reason from searches_search")
    assert search_status == "completed", reason
    assert query(db, "select count(*) from searches_evaluationjob where purpose in ('tool', 'search')") == [(3,)]
