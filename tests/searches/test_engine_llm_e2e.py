"""An Anthropic search end to end: `manage.py search` (the engine, its evaluator child and the
real runner on CPU) with the real `anthropic` SDK against the local fake Messages API, scripted
per request. What the model was told is read from the requests the fake server received."""

import json

import pytest

import playbook as book
from proposers import pack
from tests.fakes.anthropic_server import FakeAnthropic, asked_counts, ideas_call, kernel_call, task_of

from .engine_env import PROBLEM_KEY, env_for, manage, query, script, validated_db

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

KEY = "sk-ant-llm-e2e-test-key"
MAX_LINE = "for (i64 c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;"


def good_kernel(tag: str = "") -> str:
    from searches import catalog

    entry = catalog.get(PROBLEM_KEY)
    source = book.render(entry.source, entry.family, entry.device, book.recipes(entry.family, entry.device)[0], 0)
    return source + (f"\nTAG = {tag!r}\n" if tag else "")  # in code: identical sources are judged once


def broken_kernels() -> dict:
    """Brief -> a kernel the runner fails: wrong on large inputs, PyTorch in forward, an exception."""
    good = good_kernel()
    assert MAX_LINE in good
    forward = "            _launch(_lib.softmax, _ptr(x), _ptr(y), _n(rows), _n(cols))"
    assert forward in good
    return {
        "brief 1.1": good.replace(MAX_LINE, "m = 0.0f;  /* no max: exp overflows on large inputs */"),
        "brief 1.2": good.replace(forward, "            y = torch.softmax(x, dim=-1)"),
        "brief 1.3": good.replace(forward, "            raise IndexError('row 128 is past the end of the buffer')"),
    }


class Scripted:
    def __init__(self):
        self.broken = broken_kernels()
        self.ideas_asked = 0

    def __call__(self, seen):
        task = task_of(seen)
        if task == "ideas":
            self.ideas_asked += 1
            if self.ideas_asked > 1:
                return {"ideas": []}  # nothing new after round 1
            count, briefs = asked_counts(seen)
            return ideas_call(count, briefs)
        if task == "kernel":
            brief = next(b for b in self.broken if b in seen.user_text)
            return kernel_call(self.broken[brief])
        if task == "repair":
            return kernel_call(good_kernel(f"repair request {len(seen.user_text)}"))
        return kernel_call(good_kernel("starting kernel"))


def test_every_failure_is_repaired_with_the_runners_evidence_and_the_context_is_real(tmp_path):
    db, problem_id = validated_db(tmp_path)
    facts = json.dumps(json.loads((pack_fixture()).read_text()))
    script(db, "from django.utils import timezone\n"
               f"Worker.objects.create(name='cpu-facts', device='cpu', device_facts=json.loads({facts!r}),"
               " heartbeat_at=timezone.now()); print(1)")
    env = env_for(db, ANTHROPIC_API_KEY=KEY, ANTHROPIC_TIMEOUT="5")
    with FakeAnthropic(responder=Scripted()) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.url
        result = manage(db, "search", str(problem_id), "--proposer", "anthropic", "--no-progress", "--rounds", "2",
                        "--parents", "1", "--ideas", "1", "--kernels", "3", "--repairs", "1", "--bank", "0",
                        "--max-candidates", "20", "--language", "c", "--stale-rounds", "3", env=env, timeout=800, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    [(search_id, status, reason)] = query(db, "select id, status, stop_reason from searches_search")
    assert (status, reason) == ("completed", "the proposer had no new ideas after round 1 — 7 of 20 candidates")

    kernels = {k[0]: k for k in query(db, "select id, origin, status, reason, parent_id, repair_of_id, name, variant,"
                                          " median_ms, source from searches_kernel order by id")}
    broken = sorted((k for k in kernels.values() if k[1] == "llm"), key=lambda k: k[7])
    assert [k[2] for k in broken] == ["incorrect", "rejected", "runtime_error"], [k[:4] for k in broken]
    assert "offset" in broken[0][3] and "reference's own operation" in broken[1][3] and "row 128 is past the end" in broken[2][3]

    # Each repair request carries the verdict, the runner's reason verbatim and its evidence.
    repairs = [s for s in fake.requests if task_of(s) == "repair"]
    assert len(repairs) == 3
    by_kernel = {k[0]: next(s for s in repairs if f"of #{k[0]}:" in s.user_text) for k in broken}
    for kernel in broken:
        text = by_kernel[kernel[0]].user_text
        assert f"judged {kernel[2]}" in text and kernel[3] in text
    assert "offset: FAILED" in by_kernel[broken[0][0]].user_text  # the error table
    assert "uniform: passed" in by_kernel[broken[0][0]].user_text
    assert "IndexError" in by_kernel[broken[2][0]].user_text

    # The fixes are judged correct and are children of the broken kernels.
    fixes = [k for k in kernels.values() if k[1] == "repair"]
    assert sorted((k[4], k[5], k[2], k[6]) for k in fixes) == sorted(
        (b[0], b[0], "correct", f"repair 1 of #{b[0]}") for b in broken)

    # K = 3: each kernel request holds its own brief and none of its siblings'.
    kernel_requests = [s for s in fake.requests if task_of(s) == "kernel"]
    for seen in kernel_requests:
        assert sum(f"brief 1.{b}:" in seen.user_text for b in (1, 2, 3)) == 1

    # Round 2's ideas request: the bank's top-2 sources, the facts, the baselines, the tried idea.
    last_ideas = [s for s in fake.requests if task_of(s) == "ideas"][-1]
    system, user = last_ideas.system_text, last_ideas.user_text
    correct = sorted((k for k in kernels.values() if k[2] == "correct"), key=lambda k: (k[8], k[0]))
    for kernel in correct[:2]:
        assert kernel[9].strip() in system and f"Kernel #{kernel[0]}" in system
    [(facts_json,)] = query(db, "select device_facts from searches_worker where device='cpu' and device_facts != '{}' "
                                "order by heartbeat_at desc limit 1")
    lines = pack.target_lines("cpu", json.loads(facts_json))
    assert lines and all(line in system for line in lines)
    assert "Language of this search: C through the system compiler." in system
    [(validation,)] = query(db, "select validation from searches_problem where id=?", (problem_id,))
    baseline = json.loads(validation)["baseline"]
    assert f"PyTorch eager {baseline['eager_ms']:.4g} ms, torch.compile {baseline['compile_ms']:.4g} ms" in system
    assert "- Idea 1: Try variation 1. => 3/6 correct, best" in user and "repairs: 3 of 3 fixed" in user
    for kernel in broken:
        assert kernel[3][:300] in user  # the reasons of its failures


def pack_fixture():
    from pathlib import Path

    return Path(__file__).resolve().parents[1] / "fixtures" / "devices" / "cpu.json"
